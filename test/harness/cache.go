package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// EnvCache overrides the cache directory of the built programs.
const EnvCache = "GPUCLUSTER_KUBE_CACHE"

// CacheDir is the cache directory: $GPUCLUSTER_KUBE_CACHE, else <user cache>/gpucluster/kube.
func CacheDir() (string, error) {
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

// RepoRoot is the repository root (go.mod), found from this source file.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Dir is where a program's build lies: a directory named after the program and a hash of
// everything its build reads from the repository (the module's go.mod, go.sum, Go files and npm
// lock, at any depth), its packages and flags, and the Go version. A change to any of them names
// a new directory, so a stale build is never used.
func (p Program) Dir() (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), p.NPM, strings.Join(p.Packages, " "), p.LDFlags)
	root := filepath.Join(RepoRoot(), p.Module)
	err := filepath.WalkDir(root, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		switch name := d.Name(); {
		case name == "go.mod", name == "go.sum", strings.HasSuffix(name, ".go"),
			name == "package.json", name == "package-lock.json":
			data, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, file)
			fmt.Fprintln(h, rel, len(data))
			h.Write(data)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("harness program %s: reading its build module: %w", p.Name, err)
	}
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, p.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// once makes out (a directory) unless it exists: make writes it to a temporary path, which is
// then renamed to out, so that out is whole or absent. One process at a time (a lock file beside
// out): two `make harness` at once, or a test run beside one, build a program once, not twice.
// It reports whether this call made it.
func once(out string, make func(tmp string) error) (bool, error) {
	if _, err := os.Stat(out); err == nil {
		return false, nil
	}
	unlock, err := lockBeside(out)
	if err != nil {
		return false, err
	}
	defer unlock()
	if _, err := os.Stat(out); err == nil { // made by another process while we waited
		return false, nil
	}
	tmp := fmt.Sprintf("%s.tmp%d", out, os.Getpid())
	os.RemoveAll(tmp) // a crashed run of a process with our pid may have left one
	if err := make(tmp); err != nil {
		os.RemoveAll(tmp)
		return false, err
	}
	return true, os.Rename(tmp, out)
}

// lockBeside takes the lock file beside path (path.lock), waiting for another process that holds
// it, and returns what releases it.
func lockBeside(path string) (unlock func(), err error) {
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(lock.Fd()), syscall.LOCK_UN); lock.Close() }, nil
}
