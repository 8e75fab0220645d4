// Package g6eexpiry_test runs the stacks of the "g6eexpiry" group (stackgroups.Groups) through
// the real Pulumi CLI and engine, in a test binary of its own.
package g6eexpiry_test

import (
	"testing"

	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

func TestRealEngineStacks(t *testing.T) { enginetest.RunStackGroup(t, "g6eexpiry") }
