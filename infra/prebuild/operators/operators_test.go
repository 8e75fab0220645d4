// Package operators builds the operators of the harness's operators module (Kubeflow Trainer,
// JobSet, Kueue: one module, built in turn so that their shared libraries compile once) early in
// go test ./..., so that the packages that run them do not build them inside their own timeout;
// see infra/prebuild.
package operators

import (
	"testing"

	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// TestOperatorsBuild: each operator builds.
func TestOperatorsBuild(t *testing.T) {
	for _, name := range []string{kubeapi.TrainerBuild, kubeapi.JobSetBuild, kubeapi.KueueBuild} {
		if _, err := kubeapi.Binary(name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
