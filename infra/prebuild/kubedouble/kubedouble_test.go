// Package kubedouble builds the kubernetes provider double of the real-engine tests early in
// go test ./...; see infra/prebuild.
package kubedouble

import (
	"testing"

	"github.com/gpucluster/gpucluster/infra/prebuild/serves"
	"github.com/gpucluster/gpucluster/internal/realengine/tools"
)

// TestKubeDoubleBuilds: the double builds and serves the provider protocol (it prints its port,
// as a provider plugin must).
func TestKubeDoubleBuilds(t *testing.T) {
	bin, err := tools.KubeDouble()
	if err != nil {
		t.Fatal(err)
	}
	serves.Port(t, []string{"GPUCLUSTER_KUBE_DOUBLE_VERSION=0.0.0"}, bin)
}
