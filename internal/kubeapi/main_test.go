package kubeapi

import (
	"fmt"
	"os"
	"testing"
)

// TestMain builds the harness binaries before the tests and their timeout start.
func TestMain(m *testing.M) {
	if err := Prebuild(EtcdBuild, ControlPlaneBuild); err != nil {
		fmt.Fprintln(os.Stderr, "building the test harness:", err)
	}
	os.Exit(m.Run())
}
