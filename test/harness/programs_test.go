package harness_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"

	"github.com/gpucluster/gpucluster/test/harness"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// required is the version a build module's go.mod requires of a module.
func required(t *testing.T, module, path string) string {
	t.Helper()
	file := filepath.Join(harness.RepoRoot(), module, "go.mod")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := modfile.Parse(file, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == path {
			return r.Mod.Version
		}
	}
	t.Fatalf("%s does not require %s", file, path)
	return ""
}

// TestBuildModulesPinTheStatedVersions: what the harness builds is the release the code says it
// runs, and the operators it builds are the releases whose CRDs the test server installs.
func TestBuildModulesPinTheStatedVersions(t *testing.T) {
	const kube, crds = "test/kubeapi/build/kube", "test/kubeapi/build/crds"
	for _, c := range []struct{ module, path, want string }{
		{kube, "k8s.io/kubernetes", harness.KubernetesVersion},
		{kube, "k8s.io/client-go", strings.Replace(harness.KubernetesVersion, "v1.", "v0.", 1)},
		{kube, kubeapi.MPIOperatorModule, kubeapi.MPIOperatorVersion},
		{crds, kubeapi.MPIOperatorModule, kubeapi.MPIOperatorVersion},
		{kube, kubeapi.TrainerModule, kubeapi.TrainerVersion},
		{kube, kubeapi.JobSetModule, kubeapi.JobSetVersion},
		{kube, kubeapi.KueueModule, kubeapi.KueueVersion},
		{kube, kubeapi.DRADriverModule, kubeapi.DRADriverVersion},
		{crds, kubeapi.DRADriverModule, kubeapi.DRADriverVersion},
		{"test/kubeapi/build/etcd", "go.etcd.io/etcd/server/v3", harness.EtcdVersion},
		{"test/kubeapi/build/kwok", kubeapi.KwokModule, harness.KwokVersion},
		{"test/realengine/build/pulumi", "github.com/pulumi/pulumi/pkg/v3", harness.PulumiVersion},
		{"test/realengine/build/kubeprovider", harness.KubernetesProviderModule, harness.KubernetesProviderModuleVersion},
	} {
		if got := required(t, c.module, c.path); got != c.want {
			t.Errorf("%s/go.mod requires %s %s; the harness says it runs %s", c.module, c.path, got, c.want)
		}
	}
}

// TestBuiltProgramsRun: each program `make harness` built starts and is the version it claims.
// Without a built harness this fails at once, naming the command.
func TestBuiltProgramsRun(t *testing.T) {
	binary := func(name string) string {
		t.Helper()
		bin, err := harness.Binary(name)
		if err != nil {
			t.Fatal(err)
		}
		return bin
	}
	version := func(want string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(binary(name), args...)
		cmd.Env = append(cmd.Environ(), "PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("%s %v: %q, %v; want %q", name, args, out, err, want)
		}
	}
	// Stamped: an unstamped kube-apiserver says v0.0.0-master, which Helm refuses.
	version("Kubernetes "+harness.KubernetesVersion, "kube", "kube-apiserver", "--version")
	version("etcd Version: "+strings.TrimPrefix(harness.EtcdVersion, "v"), "etcd", "--version")
	version(strings.TrimPrefix(harness.KwokVersion, "v"), "kwok", "--version")
	// The Automation API refuses a CLI that does not know its version.
	version(harness.PulumiVersion, "pulumi", "version")
	// A provider plugin's first line on stdout is its gRPC port.
	checkKubernetesProvider(t, binary("pulumi-resource-kubernetes"))
	var eks harness.Program
	for _, p := range harness.Programs {
		if p.NPM {
			eks = p
		}
	}
	dir, err := eks.Built()
	if err != nil {
		t.Fatal(err)
	}
	servesPort(t, nil, "node", filepath.Join(dir, "node_modules", "@pulumi", "eks", "cmd", "provider", "index.js"))
}

// servesPort starts a provider plugin and fails unless its first line is a port number.
func servesPort(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	if len(args) > 0 { // a script's interpreter: wrap it, as the engine runs a plugin by one path
		script := filepath.Join(t.TempDir(), "plugin")
		if err := os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nexec %q %s \"$@\"\n", name, quoteAll(args))), 0o755); err != nil {
			t.Fatal(err)
		}
		name = script
	}
	p, err := harness.StartPlugin(name, env)
	if err != nil {
		t.Error(err)
		return
	}
	p.Close()
}

func quoteAll(args []string) string {
	var q []string
	for _, a := range args {
		q = append(q, strconv.Quote(a))
	}
	return strings.Join(q, " ")
}

// TestDevelopmentDocListsEveryProgram: docs/development.md's harness table names every program
// and its build module, and nothing else.
func TestDevelopmentDocListsEveryProgram(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	start := strings.Index(section, "## The test harness")
	if start < 0 {
		t.Fatal(`docs/development.md has no "## The test harness" section`)
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	// The section's first table: its rows, up to the first line that is not one.
	rows := map[string]string{}
	inTable := false
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = strings.Trim(strings.TrimSpace(cells[2]), "`")
	}
	want := map[string]string{}
	for _, p := range harness.Programs {
		want[p.Name] = p.Module
	}
	if len(rows) != len(want) {
		t.Errorf("the doc's harness table lists %v; the harness builds %v", rows, want)
	}
	for name, module := range want {
		if rows[name] != module {
			t.Errorf("the doc's harness table gives %s as %q; its build module is %s", name, rows[name], module)
		}
	}
}
