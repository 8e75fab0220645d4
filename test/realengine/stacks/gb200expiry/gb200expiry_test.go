// Package gb200expiry_test runs the stacks of the "gb200expiry" group (stackgroups.Groups) through
// the real Pulumi CLI and engine, in a test binary of its own.
package gb200expiry_test

import (
	"testing"

	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

func TestRealEngineStacks(t *testing.T) { enginetest.RunStackGroup(t, "gb200expiry") }
