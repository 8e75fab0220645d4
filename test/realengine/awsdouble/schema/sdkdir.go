package schema

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gpucluster/gpucluster/test/harness"
)

// SDKDir is the module cache's directory of the SDK at version ("6.45.0"). It never downloads:
// `make harness` does (harness.DownloadAWSSDK), so that no test waits on the network.
func SDKDir(version string) (string, error) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	// The module path has no upper-case letter, which the module cache would escape.
	dir := filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(harness.AWSSDKModule)+"@v"+strings.TrimPrefix(version, "v"))
	if _, err := os.Stat(filepath.Join(dir, "go", "aws", "provider.go")); err != nil {
		return "", fmt.Errorf("the pulumi-aws SDK %s is not in the module cache (make harness downloads every version the real-engine tier serves): %w", version, err)
	}
	return dir, nil
}
