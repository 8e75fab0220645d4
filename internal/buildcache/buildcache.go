// Package buildcache builds the test harnesses' helper binaries (the Kubernetes control plane,
// etcd, the MPI operator, the Pulumi CLI, the kubernetes provider double) from their nested build
// modules into a cache directory, once: a binary is rebuilt only when its module's files, its
// build flags or the Go version change. Concurrent test processes take turns (a lock file per
// binary) so that a cold build runs once, not once per package.
package buildcache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
)

// EnvCache overrides the cache directory of the built binaries.
const EnvCache = "GPUCLUSTER_KUBE_CACHE"

// Dir is the cache directory: $GPUCLUSTER_KUBE_CACHE, else <user cache>/gpucluster/kube.
func Dir() (string, error) {
	if d := os.Getenv(EnvCache); d != "" {
		return d, os.MkdirAll(d, 0o755)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	d := filepath.Join(base, "gpucluster", "kube")
	return d, os.MkdirAll(d, 0o755)
}

// Build is one binary of a nested build module.
type Build struct {
	Name    string // the cached file's prefix
	Dir     string // the build module's directory
	Package string // what to build, relative to Dir: "." or an import path the module requires
	LDFlags string
}

// Binary returns the cached binary, building it first when its module's files (go.mod, go.sum,
// every .go file), its flags or the Go version changed since the last build.
func Binary(b Build) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), b.Package, b.LDFlags)
	sources, _ := filepath.Glob(filepath.Join(b.Dir, "*.go"))
	for _, f := range append([]string{filepath.Join(b.Dir, "go.mod"), filepath.Join(b.Dir, "go.sum")}, sources...) {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("build module %s: %w", b.Name, err)
		}
		fmt.Fprintln(h, filepath.Base(f))
		h.Write(data)
	}
	cache, err := Dir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, b.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
	return out, Once(out, func(tmp string) error {
		args := []string{"build", "-trimpath", "-o", tmp}
		if b.LDFlags != "" {
			args = append(args, "-ldflags", b.LDFlags)
		}
		cmd := exec.Command("go", append(args, b.Package)...)
		cmd.Dir = b.Dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
		if msg, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building %s in %s (go %v): %v\n%s", b.Name, b.Dir, cmd.Args[1:], err, msg)
		}
		return nil
	})
}

// Once makes out (a file or a directory) unless it exists: make writes it to a temporary path,
// which is then renamed to out. One process at a time (a lock file beside out): test packages run
// in parallel, and making the same thing twice at once would double the cold start of each.
func Once(out string, make func(tmp string) error) error {
	if _, err := os.Stat(out); err == nil {
		return nil
	}
	lock, err := os.OpenFile(out+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(out); err == nil { // made by another process while we waited
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	if err := make(tmp); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	// Rename is atomic: concurrent test processes that made the same thing agree on it.
	return os.Rename(tmp, out)
}
