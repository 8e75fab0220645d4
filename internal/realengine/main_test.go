package realengine_test

import (
	"testing"

	"github.com/gpucluster/gpucluster/internal/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }
