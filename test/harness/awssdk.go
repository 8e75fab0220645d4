package harness

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// AWSSDKModule is the pulumi-aws Go SDK. Its source at a version is what the aws provider of
// that version accepts (test/realengine/awsdouble/schema reads it), so the harness
// downloads it at every version the real-engine tier serves: go.mod's, which the build already
// has, and the one pulumi-eks's released plugin bundles (BundledNPMVersion).
const AWSSDKModule = "github.com/pulumi/pulumi-aws/sdk/v6"

// BundledNPMVersion is the version of an npm package (@pulumi/aws) that the harness's npm
// program installs: what its committed package-lock.json resolves, which matches the released
// pulumi-eks plugin's own lock (test/realengine/eksprovider/package.json says where from).
func BundledNPMVersion(pkg string) (string, error) {
	for _, p := range Programs {
		if !p.NPM {
			continue
		}
		file := filepath.Join(RepoRoot(), p.Module, "package-lock.json")
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		var lock struct {
			Packages map[string]struct{ Version string } `json:"packages"`
		}
		if err := json.Unmarshal(b, &lock); err != nil {
			return "", fmt.Errorf("%s: %w", file, err)
		}
		v := lock.Packages["node_modules/"+pkg].Version
		if v == "" {
			return "", fmt.Errorf("%s resolves no %s", file, pkg)
		}
		return v, nil
	}
	return "", fmt.Errorf("harness: no npm program")
}

// DownloadAWSSDK puts the pulumi-aws Go SDK at version into the module cache (from the module
// proxy the machine is set up with), where the tests read it without the network.
func DownloadAWSSDK(version string) error {
	cmd := exec.Command("go", "mod", "download", AWSSDKModule+"@v"+version)
	cmd.Dir = os.TempDir() // outside any module: nothing but the module cache is written
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod download %s@v%s: %v\n%s", AWSSDKModule, version, err, out)
	}
	return nil
}
