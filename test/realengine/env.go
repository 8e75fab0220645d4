// Package realengine runs the gpucluster program through the real Pulumi CLI and engine, as
// close to `pulumi up -s <stack>` as a machine without AWS allows: the Pulumi CLI built from the
// module proxy, the program inline through the Automation API (the project's own Pulumi.yaml and
// stack files), a file backend with the passphrase secrets provider, the real pulumi-eks v2.8.1
// component provider from npm run by Node.js, and the real pulumi-kubernetes provider
// (test/harness builds it) against a real kube-apiserver with the real scheduler and
// controllers (test/kubeapi). Stand-ins, each for something that needs AWS or the internet:
// the aws provider double (answers from internal/fakecloud and records every call the engine
// makes), the aws CLI stand-in (the kubeconfig's `aws eks get-token`), and the registry stand-in
// (the charts and manifests the kubernetes provider fetches, as their releases publish them).
// The programs are gathered by the tools package.
package realengine

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/test/harness"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble/schema"
	"github.com/gpucluster/gpucluster/test/realengine/record"
	"github.com/gpucluster/gpucluster/test/realengine/registry"
	"github.com/gpucluster/gpucluster/test/realengine/tools"
)

// repoRoot is the repository root (go.mod).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Project is the Pulumi project (Pulumi.yaml).
const Project = "gpucluster"

// Passphrase protects the test stacks' secrets (the passphrase secrets provider).
const Passphrase = "gpucluster-real-engine-test"

// Env is one workspace: a copy of the project (the CLI writes each stack's encryption salt into
// its stack file, and `gpucluster expire` edits it: the repository's files stay untouched), a
// file backend, PULUMI_HOME, the record of the doubles' calls, and the API server the kubernetes
// double applies to.
type Env struct {
	Tools  *tools.Tools
	Server *kubeapi.Server
	// Registry serves what the program fetches from the internet (Published).
	Registry *registry.Server
	Work     string // the project copy: Pulumi.yaml, stacks/
	Record   string
	home     string
	backend  string
	vars     map[string]string
	// AWSVersions are the aws provider versions the double serves: go.mod's, then pulumi-eks's.
	AWSVersions []string
	// Clock is the instant the program judges the stack on; every gpucluster command Run starts
	// its own clock there (GPUCLUSTER_AT), so the CLI and the program agree on the day, and
	// neither depends on the day the tier runs. nil: the commands read this machine's clock.
	Clock func() time.Time
}

// NewEnv makes a workspace under root for the project at projectDir.
func NewEnv(root, projectDir string, tl *tools.Tools, server *kubeapi.Server) (*Env, error) {
	e := &Env{Tools: tl, Server: server, Work: filepath.Join(root, "project"), Record: filepath.Join(root, "calls.jsonl"),
		home: filepath.Join(root, "pulumi-home"), backend: filepath.Join(root, "state")}
	// Pulumi.yaml's main (infra) must exist even though the program runs inline, from this
	// process: the CLI checks the directory before it hands over to the program.
	tmp := filepath.Join(root, "tmp")
	for _, d := range []string{filepath.Join(e.Work, "stacks"), filepath.Join(e.Work, "infra"), e.home, e.backend, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	// The CLI (v3.259) writes an automatic debug log of every operation under PULUMI_HOME/logs,
	// each resource's properties in full, gzipped and encrypted: on a stack with the benchmark
	// charts (megabytes of CRDs) that was half the CLI's CPU time, and the one stack deploying
	// them took five minutes of a test binary's ten. It has no switch (upstream pulumi#22416
	// asks for one); a file where the directory goes makes StartLogging fail, and the CLI logs
	// "automatic logging unavailable" at info level and carries on without it
	// (pkg/cmd/pulumi/pulumi.go). Nothing else the engine does changes; the tests print the
	// engine's output on a failure.
	if err := os.WriteFile(filepath.Join(e.home, "logs"), []byte("the real-engine tests keep no automatic CLI logs (test/realengine/env.go)\n"), 0o644); err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(projectDir, "stacks", "Pulumi.*.yaml"))
	if err != nil {
		return nil, err
	}
	for _, f := range append(files, filepath.Join(projectDir, "Pulumi.yaml")) {
		rel, _ := filepath.Rel(projectDir, f)
		if err := copyFile(f, filepath.Join(e.Work, rel)); err != nil {
			return nil, err
		}
	}
	ca, err := server.CertificateAuthority()
	if err != nil {
		return nil, err
	}
	if e.Registry, err = Published(); err != nil {
		return nil, fmt.Errorf("the registry stand-in: %w", err)
	}
	caFile := filepath.Join(root, "registry-ca.pem")
	if err := e.Registry.WriteCA(caFile); err != nil {
		e.Close()
		return nil, err
	}
	if e.AWSVersions, err = installAWSDoubles(e.home, tl.AWSDouble); err != nil {
		e.Close()
		return nil, err
	}
	e.vars = map[string]string{
		"PATH":                     tl.Bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"PULUMI_BACKEND_URL":       "file://" + e.backend,
		"PULUMI_CONFIG_PASSPHRASE": Passphrase,
		"PULUMI_SKIP_UPDATE_CHECK": "true",
		// The kubernetes provider writes its kubeconfig to a new temporary file at every
		// configure, for Helm, and never removes it (provider pkg/provider/provider.go,
		// writeKubeconfigToFile): a user's /tmp keeps one per run; the workspace's goes with it.
		"TMPDIR": tmp,
		// Every plugin is on PATH or in the workspace's plugin directory; the engine must never
		// try to download one.
		"PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
		record.EnvFile:        e.Record,
		awsdouble.EnvEndpoint: server.URL,
		awsdouble.EnvCA:       base64.StdEncoding.EncodeToString(ca),
		awsdouble.EnvToken:    server.Token(),
		// Helm's caches and configuration (the kubernetes provider's Chart pulls with Helm):
		// the workspace's, never the user's.
		"HELM_CACHE_HOME":  filepath.Join(root, "helm", "cache"),
		"HELM_CONFIG_HOME": filepath.Join(root, "helm", "config"),
		"HELM_DATA_HOME":   filepath.Join(root, "helm", "data"),
	}
	for k, v := range e.Registry.Env(caFile) {
		e.vars[k] = v
	}
	return e, nil
}

// Close stops the workspace's registry stand-in.
func (e *Env) Close() {
	if e.Registry != nil {
		e.Registry.Close()
	}
}

// installAWSDoubles installs the aws double as the aws plugin at every version a user's `pulumi
// up` loads: go.mod's pulumi-aws (the program's own resources) and the one pulumi-eks's released
// plugin bundles (its children: @pulumi/aws stamps each resource it registers with its own
// version). Each goes where `pulumi plugin install resource aws <version>` puts it,
// <PULUMI_HOME>/plugins/resource-aws-v<version>, and serves that version's schema (schema.Load
// of the SDK at that version). It returns the versions, go.mod's first.
func installAWSDoubles(home, double string) ([]string, error) {
	program, err := awsProviderVersion()
	if err != nil {
		return nil, err
	}
	bundled, err := harness.BundledNPMVersion("@pulumi/aws")
	if err != nil {
		return nil, err
	}
	versions := []string{program}
	if bundled != program {
		versions = append(versions, bundled)
	}
	for _, v := range versions {
		sdk, err := schema.SDKDir(v)
		if err != nil {
			return nil, err
		}
		dir := filepath.Join(home, "plugins", "resource-aws-v"+v)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		script := fmt.Sprintf("#!/bin/sh\nexport %s=%q %s=%q\nexec %q \"$@\"\n", awsdouble.EnvVersion, v, awsdouble.EnvSDK, sdk, double)
		if err := os.WriteFile(filepath.Join(dir, "pulumi-resource-aws"), []byte(script), 0o755); err != nil {
			return nil, err
		}
	}
	return versions, nil
}

// awsProviderVersion is the pulumi-aws SDK version of go.mod: the plugin version the program asks
// the engine for.
func awsProviderVersion() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", harness.AWSSDKModule)
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("reading the pulumi-aws SDK version from go.mod: %v", err)
	}
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// Backend is the directory of the workspace's file backend (PULUMI_BACKEND_URL).
func (e *Env) Backend() string { return e.backend }

// SetEnv sets a variable of the environment the CLI, its plugins and the doubles run in; it
// applies to stacks selected afterwards.
func (e *Env) SetEnv(key, value string) { e.vars[key] = value }

// StackFile is the workspace's copy of a stack's file.
func (e *Env) StackFile(stack string) string {
	return filepath.Join(e.Work, "stacks", "Pulumi."+stack+".yaml")
}

// Stack selects (creating it the first time) a stack whose program is fn, run inline: the CLI
// reads the project and the stack's configuration from the workspace, validates it against
// Pulumi.yaml and passes it to the program, exactly as under pulumi up.
func (e *Env) Stack(ctx context.Context, stack string, fn pulumi.RunFunc) (auto.Stack, error) {
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: e.Tools.PulumiRoot()})
	if err != nil {
		return auto.Stack{}, err
	}
	return auto.UpsertStackInlineSource(ctx, stack, Project, fn, auto.WorkDir(e.Work), auto.PulumiHome(e.home),
		auto.Pulumi(cmd), auto.EnvVars(e.vars), auto.SecretsProvider("passphrase"))
}

// Calls are the doubles' record so far.
func (e *Env) Calls() ([]record.Call, error) { return record.Read(e.Record) }

// CLI runs the Pulumi CLI in the workspace, as a user would at the project root.
func (e *Env) CLI(ctx context.Context, args ...string) (string, error) {
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: e.Tools.PulumiRoot()})
	if err != nil {
		return "", err
	}
	env := []string{"PULUMI_HOME=" + e.home}
	for k, v := range e.vars {
		env = append(env, k+"="+v)
	}
	stdout, stderr, code, err := cmd.Run(ctx, e.Work, nil, nil, nil, env, args...)
	if err != nil {
		return stdout, fmt.Errorf("pulumi %s: exit %d: %v\n%s", strings.Join(args, " "), code, err, stderr)
	}
	return stdout, nil
}

// Run runs a command at the workspace root with the workspace's environment (PATH first finds
// the tools), as a user would at the project root; stdin may be nil. A command that ran and
// failed gives an error wrapping its *exec.ExitError.
func (e *Env) Run(ctx context.Context, stdin io.Reader, name string, args ...string) (string, error) {
	cmd := e.Command(ctx, name, args...)
	cmd.Stdin = stdin
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

// Command is the command Run runs, not started: for a test that reads its output as it comes or
// signals it as a terminal would.
func (e *Env) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	path := name
	if _, err := os.Stat(filepath.Join(e.Tools.Bin, name)); err == nil {
		path = filepath.Join(e.Tools.Bin, name) // exec looks names up in this process's PATH, not cmd.Env's
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = e.Work
	// PULUMI_HOME too: a gpucluster command that drives the engine (experiment run) finds the
	// aws doubles there, as the tier's own stacks do.
	cmd.Env = append(os.Environ(), "PULUMI_HOME="+e.home)
	for k, v := range e.vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if e.Clock != nil {
		cmd.Env = append(cmd.Env, "GPUCLUSTER_AT="+e.Clock().UTC().Format(time.RFC3339))
	}
	return cmd
}
