// Package tools builds and installs the programs the real-engine tests (internal/realengine) run:
// the Pulumi CLI, the provider doubles, pulumi-eks's provider from npm, and gpucluster. It
// imports nothing heavy, so that the packages under infra/prebuild, which build each tool once
// early in `go test ./...`, compile in seconds.
package tools

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/gpucluster/gpucluster/internal/buildcache"
	"github.com/gpucluster/gpucluster/internal/preflight"
)

// PulumiVersion is the Pulumi CLI the tests build (build/pulumi/go.mod pins the same module).
const PulumiVersion = "v" + preflight.TestedPulumiVersion

// dir is the realengine package's directory, where the build modules and the npm lock live.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..")
}

// PulumiCLI is the cached Pulumi CLI, built once per machine from build/pulumi.
func PulumiCLI() (string, error) {
	return buildcache.Binary(buildcache.Build{Name: "pulumi", Dir: filepath.Join(dir(), "build", "pulumi"),
		Package: "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
		// The Automation API refuses a CLI that does not know its version.
		LDFlags: "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=" + PulumiVersion})
}

// KubeDouble is the cached kubernetes provider double, built once per machine from
// build/kubedouble.
func KubeDouble() (string, error) {
	return buildcache.Binary(buildcache.Build{Name: "kubedouble", Dir: filepath.Join(dir(), "build", "kubedouble"), Package: "."})
}

// Tools are the programs the real engine runs, in one directory that goes first on PATH:
// pulumi, the provider plugins the engine looks up by name (pulumi-resource-aws, -kubernetes,
// -eks), the aws CLI double pulumi-eks insists on, and gpucluster.
type Tools struct {
	Bin string
}

// PulumiRoot is the directory whose bin/pulumi the Automation API runs.
func (t *Tools) PulumiRoot() string { return filepath.Dir(t.Bin) }

// Prepare builds and installs every tool into root/bin (building the cached ones once per
// machine), and checks what the machine must provide: kubectl, Node.js and npm.
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
	cli, err := PulumiCLI()
	if err != nil {
		return nil, err
	}
	kube, err := KubeDouble()
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
		build.Dir = filepath.Join(dir(), "..", "..")
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building %s: %v\n%s", name, err, out)
		}
	}
	eks, err := EKSProvider()
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

// EKSProvider installs @pulumi/eks from the committed package-lock.json (npm ci, no install
// scripts: @pulumi/kubernetes' would download a plugin) into the cache, once per lock file.
func EKSProvider() (string, error) {
	src := filepath.Join(dir(), "eksprovider")
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	cache, err := buildcache.Dir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "eksprovider-"+hex.EncodeToString(h.Sum(nil))[:16])
	return out, buildcache.Once(out, func(tmp string) error {
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return err
		}
		for _, f := range []string{"package.json", "package-lock.json"} {
			b, _ := os.ReadFile(filepath.Join(src, f))
			if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
				return err
			}
		}
		npm := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		npm.Dir = tmp
		if msg, err := npm.CombinedOutput(); err != nil {
			return fmt.Errorf("installing @pulumi/eks (npm ci in %s): %v\n%s", tmp, err, msg)
		}
		return nil
	})
}
