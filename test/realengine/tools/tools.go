// Package tools gathers the programs the real-engine tests (test/realengine) run: the Pulumi
// CLI, the real pulumi-kubernetes provider and pulumi-eks's provider from npm, which `make
// harness` built (test/harness), and this module's aws provider double, aws CLI stand-in and
// gpucluster CLI, built here from the current sources (a link: `make harness` compiled them).
package tools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/gpucluster/gpucluster/internal/preflight"
	"github.com/gpucluster/gpucluster/test/harness"
)

// Tools are the programs the real engine runs, in one directory that goes first on PATH:
// pulumi, the provider plugins the engine looks up by name (pulumi-resource-kubernetes, -eks),
// the aws CLI double pulumi-eks insists on, and gpucluster; and the aws provider double.
type Tools struct {
	Bin string
	// KubernetesProvider names the kubernetes provider binary and the version it reports.
	KubernetesProvider string
	// AWSDouble is the aws provider double, kept off PATH: the engine finds a plugin on PATH
	// whatever version it asks for, and it must ask for two (realengine.Env installs one
	// plugin directory per version, as `pulumi plugin install resource aws <version>` does).
	AWSDouble string
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
	kube, err := harness.Binary("pulumi-resource-kubernetes")
	if err != nil {
		return nil, err
	}
	for name, target := range map[string]string{"pulumi": cli, "pulumi-resource-kubernetes": kube} {
		if err := os.Symlink(target, filepath.Join(t.Bin, name)); err != nil {
			return nil, err
		}
	}
	plugin, err := harness.StartPlugin(kube, nil)
	if err != nil {
		return nil, err
	}
	version, err := plugin.Version()
	plugin.Close()
	if err != nil {
		return nil, fmt.Errorf("asking %s its version: %w", kube, err)
	}
	t.KubernetesProvider = "pulumi-resource-kubernetes " + version + " (real)"
	// The aws double is part of this module (it shares internal/fakecloud with the offline
	// engine), and so are the aws CLI stand-in (pulumi-eks checks its version; the kubeconfig
	// runs its `eks get-token`) and the gpucluster CLI the walkthroughs run: built from the
	// current sources once for every test binary (harness.BuildOwn).
	own, err := harness.BuildOwn()
	if err != nil {
		return nil, err
	}
	t.AWSDouble = filepath.Join(own, "pulumi-resource-aws")
	for _, name := range []string{"aws", "gpucluster"} {
		if err := os.Symlink(filepath.Join(own, name), filepath.Join(t.Bin, name)); err != nil {
			return nil, err
		}
	}
	eks, err := eksProvider()
	if err != nil {
		return nil, err
	}
	// The real component provider, as `pulumi plugin install resource eks 2.8.1` would run it.
	script := fmt.Sprintf("#!/bin/sh\nexec node %q \"$@\"\n", filepath.Join(eks, "node_modules", "@pulumi", "eks", "cmd", "provider", "index.js"))
	if err := os.WriteFile(filepath.Join(t.Bin, "pulumi-resource-eks"), []byte(script), 0o755); err != nil {
		return nil, err
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
