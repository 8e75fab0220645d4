package realengine_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/gpucluster/gpucluster/internal/realengine/tools"
)

// tools are gathered once, before the tests: the harness programs `make harness` built, and
// this module's gpucluster CLI and aws double, built from the current sources.
var (
	prepared   *tools.Tools
	prepareErr error
)

func TestMain(m *testing.M) {
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
