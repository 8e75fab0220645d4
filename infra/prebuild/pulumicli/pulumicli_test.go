// Package pulumicli builds the Pulumi CLI of the real-engine tests early in go test ./...; see
// infra/prebuild.
package pulumicli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/realengine/tools"
)

// TestPulumiCLIBuilds: the CLI builds and knows its version (the Automation API refuses one that
// does not).
func TestPulumiCLIBuilds(t *testing.T) {
	bin, err := tools.PulumiCLI()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "version")
	cmd.Env = append(cmd.Environ(), "PULUMI_SKIP_UPDATE_CHECK=true", "PULUMI_HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != tools.PulumiVersion {
		t.Fatalf("pulumi version: %q, %v; want %s", out, err, tools.PulumiVersion)
	}
}
