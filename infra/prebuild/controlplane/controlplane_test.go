// Package controlplane builds the test control plane (kube-apiserver, kube-scheduler and the
// controllers, one binary) early in go test ./...; see infra/prebuild.
package controlplane

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// TestControlPlaneBuilds: the binary builds and reports the release it was built from (stamped:
// an unstamped build says v0.0.0-master, which Helm refuses as a Kubernetes version).
func TestControlPlaneBuilds(t *testing.T) {
	if _, err := kubeapi.Binary(kubeapi.EtcdBuild); err != nil { // the server's store, built first: it is small
		t.Fatal(err)
	}
	bin, err := kubeapi.Binary(kubeapi.ControlPlaneBuild)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "kube-apiserver", "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "Kubernetes "+kubeapi.KubernetesVersion {
		t.Fatalf("kube-apiserver --version: %q, %v; want Kubernetes %s", out, err, kubeapi.KubernetesVersion)
	}
}
