// Package enginetest is what the real-engine test packages share (test/realengine and the
// per-group packages under test/realengine/stacks): the tools each test binary gathers once,
// the cluster a stack deploys to, a stack's deployment through the real CLI and engine, and the
// checks every stack passes. The stacks are divided among several packages because each package
// is a test binary of its own, with its own go test alarm (10 minutes): all the stacks in one
// binary took 9 to 9.5 minutes on an idle two-core machine and 21 on a loaded one.
package enginetest

import (
	"fmt"
	"os"
	"testing"

	"github.com/gpucluster/gpucluster/test/harness"
	"github.com/gpucluster/gpucluster/test/realengine/tools"
)

// ProjectDir is the repository root: Pulumi.yaml, stacks/, docs/.
var ProjectDir = harness.RepoRoot()

// tools are gathered once per test binary, before its tests: the harness programs `make harness`
// built, and this module's gpucluster CLI and aws double, built from the current sources.
var (
	prepared   *tools.Tools
	prepareErr error
)

// Main is a real-engine test package's TestMain.
func Main(m *testing.M) {
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

// NeedTools are the prepared tools; a test fails at once when they could not be (the error names
// `make harness` when a harness program is missing).
func NeedTools(t *testing.T) *tools.Tools {
	t.Helper()
	if prepareErr != nil {
		t.Fatalf("preparing the real engine: %v", prepareErr)
	}
	if prepared == nil {
		t.Fatal("the real engine's tools were not prepared: the package's TestMain must call enginetest.Main")
	}
	return prepared
}
