package realengine_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/gpucluster/gpucluster/internal/kubeapi"
	"github.com/gpucluster/gpucluster/internal/realengine/tools"
)

// tools are built once, before the tests and their timeout start (cold: the Pulumi CLI and the
// kubernetes double are minutes on two cores).
var (
	prepared   *tools.Tools
	prepareErr error
)

func TestMain(m *testing.M) {
	if err := kubeapi.Prebuild(kubeapi.EtcdBuild, kubeapi.ControlPlaneBuild); err != nil {
		fmt.Fprintln(os.Stderr, "building the test harness:", err)
	}
	root, err := os.MkdirTemp("", "gpucluster-realengine-tools-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	prepared, prepareErr = tools.Prepare(root)
	code := m.Run()
	os.RemoveAll(root)
	os.Exit(code)
}

func needTools(t *testing.T) *tools.Tools {
	t.Helper()
	if prepareErr != nil {
		t.Fatalf("preparing the real engine: %v", prepareErr)
	}
	return prepared
}
