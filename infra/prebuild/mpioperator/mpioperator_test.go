// Package mpioperator builds the MPI operator of the harness early in go test ./..., in a binary of
// its own; see infra/prebuild.
package mpioperator

import (
	"testing"

	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// TestMPIOperatorBuilds: the MPI operator builds.
func TestMPIOperatorBuilds(t *testing.T) {
	if _, err := kubeapi.Binary(kubeapi.MPIOperatorBuild); err != nil {
		t.Fatal(err)
	}
}
