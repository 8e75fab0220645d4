// Package preflight checks, before `pulumi up`, the programs a deployment of gpucluster runs on
// the operator's machine, each against the version whose source says it is needed. The
// gpucluster CLI reports them (gpucluster preflight) and the real-engine tests check the same
// definitions before they run the real CLI.
package preflight

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Tool is one program a deployment needs.
type Tool struct {
	Command string
	Min     string // the lowest version that works, dotted
	// MinByMajor overrides Min for a major version (the AWS CLI v1 has minimums of its own).
	MinByMajor map[string]string
	Why        string // who runs it, with the source of the minimum
	Install    string // how to get it
	args       []string
	parse      func(out []byte) (string, error)
}

// TestedPulumiVersion is the Pulumi CLI the real-engine tests build and run every stack with.
const TestedPulumiVersion = "3.259.0"

// Tools are what `pulumi up` of a gpucluster stack runs on the operator's machine.
var Tools = []Tool{
	{Command: "pulumi", Min: TestedPulumiVersion, args: []string{"version"}, parse: firstVersion,
		Why:     "runs the program; gpucluster's real-engine tests use this version",
		Install: "install the Pulumi CLI (pulumi.com/docs/install) at v" + TestedPulumiVersion + " or newer"},
	{Command: "go", Min: "1.26.6", args: []string{"env", "GOVERSION"}, parse: firstVersion,
		Why:     "builds the program at every pulumi up (go.mod's go directive)",
		Install: "install Go 1.26.6 or newer (go.dev/dl)"},
	{Command: "kubectl", Min: "1.24.0", args: []string{"version", "--client=true", "--output=json"}, parse: kubectlVersion,
		Why:     "pulumi-eks v2.8.1 refuses to create a cluster without it (nodejs/eks/dependencies.js, assertCompatibleKubectlVersionExists)",
		Install: "install kubectl 1.24 or newer (kubernetes.io/docs/tasks/tools)"},
	{Command: "aws", Min: "2.7.0", MinByMajor: map[string]string{"1": "1.24.0"}, args: []string{"--version"}, parse: firstVersion,
		Why:     "pulumi-eks v2.8.1 refuses to create a cluster without it (dependencies.js, assertCompatibleAWSCLIExists), and the kubeconfig it writes runs `aws eks get-token`",
		Install: "install the AWS CLI v2 (docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html)"},
}

// Result is what a check found of one tool.
type Result struct {
	Tool    Tool
	Version string // "" when missing or unreadable
	Err     error  // nil when the tool is there and new enough
}

// Check runs every tool's version command.
func Check() []Result {
	out := make([]Result, 0, len(Tools))
	for _, t := range Tools {
		out = append(out, t.Check())
	}
	return out
}

// Check runs the tool's version command and compares the version with the minimum.
func (t Tool) Check() Result {
	r := Result{Tool: t}
	path, err := exec.LookPath(t.Command)
	if err != nil {
		r.Err = fmt.Errorf("%s is not on PATH: %s; %s", t.Command, t.Why, t.Install)
		return r
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, t.args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		r.Err = fmt.Errorf("%s %s failed (%v): %s", t.Command, strings.Join(t.args, " "), err, strings.TrimSpace(stderr.String()))
		return r
	}
	if r.Version, err = t.parse(out); err != nil {
		r.Err = fmt.Errorf("%s: %v", t.Command, err)
		return r
	}
	min := t.Min
	if m, ok := t.MinByMajor[strings.Split(r.Version, ".")[0]]; ok {
		min = m
	}
	if Less(r.Version, min) {
		r.Err = fmt.Errorf("%s %s is older than %s, which %s needs: %s", t.Command, r.Version, min, t.Why, t.Install)
	}
	return r
}

var versionPattern = regexp.MustCompile(`\d+\.\d+(\.\d+)?`)

// firstVersion is the first dotted version in a command's output ("v3.259.0", "go1.26.8",
// "aws-cli/2.27.0 Python/3.13").
func firstVersion(out []byte) (string, error) {
	v := versionPattern.Find(out)
	if v == nil {
		return "", fmt.Errorf("no version in %q", strings.TrimSpace(string(out)))
	}
	return string(v), nil
}

// kubectlVersion reads clientVersion.gitVersion as pulumi-eks does.
func kubectlVersion(out []byte) (string, error) {
	var v struct {
		ClientVersion struct {
			GitVersion string `json:"gitVersion"`
		} `json:"clientVersion"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return "", fmt.Errorf("kubectl version --output=json: %v", err)
	}
	return firstVersion([]byte(v.ClientVersion.GitVersion))
}

// Less compares dotted versions numerically ("1.9" < "1.24").
func Less(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) || i < len(pb); i++ {
		x, y := 0, 0
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}
