// Package realengine runs the gpucluster program through the real Pulumi CLI and engine, as
// close to `pulumi up -s <stack>` as a machine without AWS allows: the Pulumi CLI v3.259.0 built
// from the module proxy, the program inline through the Automation API (the project's own
// Pulumi.yaml and stack files), a file backend with the passphrase secrets provider, the real
// pulumi-eks v2.8.1 component provider from npm run by Node.js, and test doubles of the aws and
// kubernetes providers (whose real binaries are not served here): the aws double answers from
// internal/fakecloud, the kubernetes double applies every object to a real kube-apiserver with the
// real scheduler and controllers (internal/kubeapi). Both record every call the engine makes.
package realengine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/gpucluster/gpucluster/internal/buildcache"
	"github.com/gpucluster/gpucluster/internal/preflight"
)

// PulumiVersion is the Pulumi CLI the tests build (build/pulumi/go.mod pins the same module).
const PulumiVersion = "v" + preflight.TestedPulumiVersion

// dir is this package's directory.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
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
	cli, err := buildcache.Binary(buildcache.Build{Name: "pulumi", Dir: filepath.Join(dir(), "build", "pulumi"),
		Package: "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
		// The Automation API refuses a CLI that does not know its version.
		LDFlags: "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=" + PulumiVersion})
	if err != nil {
		return nil, err
	}
	kube, err := buildcache.Binary(buildcache.Build{Name: "kubedouble", Dir: filepath.Join(dir(), "build", "kubedouble"), Package: "."})
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

// eksProvider installs @pulumi/eks from the committed package-lock.json (npm ci, no install
// scripts: @pulumi/kubernetes' would download a plugin) into the cache, once per lock file.
func eksProvider() (string, error) {
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
	if _, err := os.Stat(filepath.Join(out, "node_modules")); err == nil {
		return out, nil
	}
	lock, err := os.OpenFile(out+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(out, "node_modules")); err == nil {
		return out, nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, _ := os.ReadFile(filepath.Join(src, f))
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			return "", err
		}
	}
	npm := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	npm.Dir = tmp
	if msg, err := npm.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("installing @pulumi/eks (npm ci in %s): %v\n%s", tmp, err, msg)
	}
	return out, os.Rename(tmp, out)
}
