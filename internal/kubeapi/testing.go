package kubeapi

import (
	"os"
	"testing"
)

// EnvSkip lets a developer skip the API-server tests on a machine that cannot build them; it is
// ignored under CI (CI=true), where the tests always run or fail.
const EnvSkip = "GPUCLUSTER_SKIP_APISERVER"

// StartForTest starts a server for one test and stops it when the test ends. It fails the test
// loudly when the server cannot be built or started; it never skips silently.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	if os.Getenv(EnvSkip) == "1" && os.Getenv("CI") != "true" {
		t.Skipf("%s=1: skipping the real kube-apiserver tests (never skipped under CI)", EnvSkip)
	}
	s, err := Start()
	if err != nil {
		t.Fatalf("the test kube-apiserver %s could not start: %v", KubernetesVersion, err)
	}
	t.Cleanup(s.Stop)
	return s
}
