package kubeapi

import (
	"os"
	"testing"
)

// EnvSkip lets a developer skip the API-server tests on a machine that cannot build them; it is
// ignored under CI (CI=true), where the tests always run or fail.
const EnvSkip = "GPUCLUSTER_SKIP_APISERVER"

// Skipped says why the API-server tests do not run in this test binary, or "": go test -short
// (`make quick`, the inner loop, which leaves every control-plane test to `make test`), or EnvSkip
// outside CI.
func Skipped() string {
	switch {
	case testing.Short():
		return "go test -short: skipping the real kube-apiserver tests (make test runs them)"
	case os.Getenv(EnvSkip) == "1" && os.Getenv("CI") != "true":
		return EnvSkip + "=1: skipping the real kube-apiserver tests (never skipped under CI)"
	}
	return ""
}

// StartForTest starts a server for one test and stops it when the test ends. It fails the test
// loudly when the server cannot be built or started; it skips only when Skipped says so.
func StartForTest(t testing.TB) *Server {
	t.Helper()
	if why := Skipped(); why != "" {
		t.Skip(why)
	}
	s, err := Start()
	if err != nil {
		t.Fatalf("the test kube-apiserver %s could not start: %v", KubernetesVersion, err)
	}
	t.Cleanup(s.Stop)
	return s
}
