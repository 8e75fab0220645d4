// Package tools gathers the programs the real-engine tests (internal/realengine) run: the Pulumi
// CLI, the kubernetes provider double and pulumi-eks's provider from npm, which `make harness`
// built (internal/harness), and this module's aws provider double and gpucluster CLI, built here
// from the current sources (a link: `make harness` compiled them).
package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gpucluster/gpucluster/internal/harness"
	"github.com/gpucluster/gpucluster/internal/preflight"
)

// Tools are the programs the real engine runs, in one directory that goes first on PATH:
// pulumi, the provider plugins the engine looks up by name (pulumi-resource-aws, -kubernetes,
// -eks), the aws CLI double pulumi-eks insists on, and gpucluster.
type Tools struct {
	Bin string
}

// PulumiRoot is the directory whose bin/pulumi the Automation API runs.
func (t *Tools) PulumiRoot() string { return filepath.Dir(t.Bin) }

// Prepare installs every tool into root/bin: the harness programs `make harness` built (an error
// names that command when one is missing), and the two of this module, built from the current
// sources; it checks what the machine must provide: kubectl, Node.js and npm.
func Prepare(root string) (*Tools, error) {
	for _, tool := range preflight.Tools {
		if tool.Command != "kubectl" {
			continue // pulumi and aws are provided below; go runs this test
		}
		if r := tool.Check(); r.Err != nil {
			return nil, fmt.Errorf("the real-engine tests need what pulumi up needs: %w", r.Err)
		}
	}
	for _, cmd := range []string{"node", "npm"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return nil, fmt.Errorf("the real-engine tests run pulumi-eks's provider with Node.js: %s is not on PATH (apt-get install nodejs npm)", cmd)
		}
	}
	t := &Tools{Bin: filepath.Join(root, "bin")}
	if err := os.MkdirAll(t.Bin, 0o755); err != nil {
		return nil, err
	}
	cli, err := harness.Binary("pulumi")
	if err != nil {
		return nil, err
	}
	kube, err := harness.Binary("kubedouble")
	if err != nil {
		return nil, err
	}
	for name, target := range map[string]string{"pulumi": cli, "pulumi-resource-kubernetes": kube} {
		if err := os.Symlink(target, filepath.Join(t.Bin, name)); err != nil {
			return nil, err
		}
	}
	// The aws double is part of this module (it shares internal/fakecloud with the offline
	// engine), and so is the gpucluster CLI the walkthroughs run: go build's cache makes a
	// rebuild cheap.
	for name, pkg := range map[string]string{"pulumi-resource-aws": "./internal/realengine/cmd/pulumi-resource-aws", "gpucluster": "./cmd/gpucluster"} {
		build := exec.Command("go", "build", "-o", filepath.Join(t.Bin, name), pkg)
		build.Dir = harness.RepoRoot()
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s: %v\n%s", name, err, out)
		}
	}
	eks, err := eksProvider()
	if err != nil {
		return nil, err
	}
	scripts := map[string]string{
		// The real component provider, as `pulumi plugin install resource eks 2.8.1` would run it.
		"pulumi-resource-eks": fmt.Sprintf("#!/bin/sh\nexec node %q \"$@\"\n", filepath.Join(eks, "node_modules", "@pulumi", "eks", "cmd", "provider", "index.js")),
		// pulumi-eks checks `aws --version` before it creates a cluster (dependencies.js,
		// assertCompatibleAWSCLIExists); nothing else runs the CLI here (the kubernetes double
		// does not run the kubeconfig's `aws eks get-token`). It claims the minimum it checks.
		"aws": "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'aws-cli/2.7.0 gpucluster-test-double'; exit 0; fi\n" +
			"echo \"aws CLI test double: only --version is answered, not: $*\" >&2\nexit 1\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(t.Bin, name), []byte(body), 0o755); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// eksProvider is where `make harness` installed @pulumi/eks from the committed package-lock.json.
func eksProvider() (string, error) {
	for _, p := range harness.Programs {
		if p.NPM {
			return p.Built()
		}
	}
	return "", fmt.Errorf("harness: no npm program")
}
