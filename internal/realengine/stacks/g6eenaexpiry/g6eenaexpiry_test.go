// Package g6eenaexpiry_test runs the stacks of the "g6eenaexpiry" group (enginetest.StackGroups) through
// the real Pulumi CLI and engine, in a test binary of its own.
package g6eenaexpiry_test

import (
	"testing"

	"github.com/gpucluster/gpucluster/internal/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

func TestRealEngineStacks(t *testing.T) { enginetest.RunStackGroup(t, "g6eenaexpiry") }
