package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// OwnPrograms are the main packages of this module the real-engine tier runs: the gpucluster CLI
// its walkthroughs run and its chart renderer (beside it, where the CLI finds it), the aws
// provider double and the aws CLI stand-in.
var OwnPrograms = []string{"./cmd/gpucluster", "./cmd/gpucluster-charts", "./test/realengine/cmd/pulumi-resource-aws", "./test/realengine/cmd/aws"}

// BuildOwn builds OwnPrograms from the current sources into one directory per checkout (under
// CacheDir, named by a hash of the repository's path) and returns it. go build finds a binary
// there up to date and does not link it again, so the tier's fifteen test binaries, and `make
// harness` before them, link these programs once per change, not once each (a link of the three
// others is 8 to 9 s of CPU). One process builds at a time (a lock file beside the directory).
func BuildOwn() (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(RepoRoot()))
	dir := filepath.Join(cache, "own-"+hex.EncodeToString(sum[:])[:16])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockBeside(dir)
	if err != nil {
		return "", err
	}
	defer unlock()
	build := exec.Command("go", append([]string{"build", "-o", dir + string(filepath.Separator)}, OwnPrograms...)...)
	build.Dir = RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %v: %v\n%s", OwnPrograms, err, out)
	}
	return dir, nil
}
