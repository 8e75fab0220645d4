// Package kubeapi starts a real kube-apiserver and etcd on loopback for tests, with the real
// Karpenter and MPI operator CRDs installed, and creates objects in it over plain HTTP; on
// request it adds a real kube-scheduler. The binaries are the ones `make harness` built from the
// nested modules under build/ (test/harness).
package kubeapi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gpucluster/gpucluster/test/harness"
)

// Versions of what the harness builds and installs (test/harness builds the programs).
const (
	KubernetesVersion = harness.KubernetesVersion
	EtcdVersion       = harness.EtcdVersion
	KarpenterVersion  = "v1.15.2"
)

// Karpenter is the Karpenter AWS provider release whose CRDs the test server installs, whose
// chart the registry stand-in serves, and whose generated tables (prices, network limits) and
// IAM policy the topology core is held to. Its go.mod asks for go 1.26.11, newer than the
// machine's Go, so it is fetched as a source module (harness.SourceModule), not required by a
// build module. Sum is its line in the checksum database
// (https://sum.golang.org/lookup/github.com/aws/karpenter-provider-aws@v1.15.2).
var Karpenter = harness.SourceModule{Path: KarpenterModule, Version: KarpenterVersion,
	Sum: "h1:RGw64PB2ROUHZIUhBqjO78l3zJ9YctnWeullrr4cxYI="}

// buildDir is the directory of one nested build module (kubernetes, etcd, crds).
func buildDir(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "build", name)
}

// binary is a harness binary that `make harness` built; it never builds (test/harness).
func binary(name string) (string, error) { return harness.Binary(name) }

// Modules whose CRDs the test server installs, pinned by build/crds/go.mod (Karpenter: by
// Karpenter above), and by build/kube/go.mod for the controllers the harness builds from them (so
// that CRDs and controllers are one release).
const (
	KarpenterModule   = "github.com/aws/karpenter-provider-aws"
	MPIOperatorModule = "github.com/kubeflow/mpi-operator"
	TrainerModule     = "github.com/kubeflow/trainer/v2"
	JobSetModule      = "sigs.k8s.io/jobset"
	KueueModule       = "sigs.k8s.io/kueue"
	// DRADriverModule is the NVIDIA DRA driver, whose chart's CRDs (ComputeDomain,
	// ComputeDomainClique) the server installs.
	DRADriverModule = "sigs.k8s.io/dra-driver-nvidia-gpu"
	// LWSModule is LeaderWorkerSet, whose chart Kubeflow Trainer's chart carries as a subchart
	// (off unless its data cache is on, but packaged all the same).
	LWSModule = "sigs.k8s.io/lws"
)

// DRADriverVersion is the NVIDIA DRA driver release build/crds/go.mod pins, and build/kube/go.mod
// (its ComputeDomain controller).
const DRADriverVersion = "v0.4.1"

// OperatorsModule is the build module of the operators the harness runs (the MPI operator,
// Kubeflow Trainer, JobSet, Kueue, the DRA driver's ComputeDomain controller): the control
// plane's, at one Kubernetes version.
const OperatorsModule = "kube"

// MPIOperatorVersion is the MPI operator release whose CRD the test server installs.
const MPIOperatorVersion = "v0.8.2"

// KarpenterModuleDir is where the pinned Karpenter AWS provider lies in the harness cache: the
// one place gpucluster fetches it, for its CRDs (the test API server), its chart and its
// generated data (prices, bandwidth), all at the same version.
func KarpenterModuleDir() (string, error) { return Karpenter.Dir() }

// ModuleDir is where a module pinned by build/crds/go.mod (or build/kube/go.mod; Karpenter's:
// KarpenterModuleDir) lies in the module cache. `go mod download` reads the cache when the module is there (then it needs
// no network: GOPROXY=off works) and the module proxy otherwise, checking go.sum either way.
func ModuleDir(module string) (string, error) {
	if module == KarpenterModule {
		return KarpenterModuleDir()
	}
	dir := buildDir("crds")
	if module == TrainerModule || module == JobSetModule || module == KueueModule {
		dir = buildDir(OperatorsModule)
	}
	return moduleDirIn(dir, module)
}

// moduleDirIn is where a module that the build module in dir pins lies in the module cache.
func moduleDirIn(dir, module string) (string, error) {
	download := exec.Command("go", "mod", "download", module)
	download.Dir = dir
	if msg, err := download.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go mod download %s: %v\n%s", module, err, msg)
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s: %v", module, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// crdFiles are the CRD manifests the test server installs: Karpenter's (pkg/apis/crds), the
// MPI operator's MPIJob (manifests/base, the file its release applies), Kubeflow Trainer's
// (manifests/base/crds), JobSet's and Kueue's (config/components/crd/bases: the bases, without
// the conversion webhooks the release patches in; everything here speaks Kueue's storage version),
// and the NVIDIA DRA driver chart's (deployments/helm/dra-driver-nvidia-gpu/crds).
func crdFiles() ([]string, error) {
	karpenter, err := KarpenterModuleDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(karpenter, "pkg", "apis", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", karpenter)
	}
	mpi, err := ModuleDir(MPIOperatorModule)
	if err != nil {
		return nil, err
	}
	files = append(files, filepath.Join(mpi, "manifests", "base", "kubeflow.org_mpijobs.yaml"))
	trainer, err := ModuleDir(TrainerModule)
	if err != nil {
		return nil, err
	}
	trainerCRDs, err := filepath.Glob(filepath.Join(trainer, "manifests", "base", "crds", "trainer.kubeflow.org_*.yaml"))
	if err != nil || len(trainerCRDs) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", trainer)
	}
	jobset, err := ModuleDir(JobSetModule)
	if err != nil {
		return nil, err
	}
	files = append(append(files, trainerCRDs...), filepath.Join(jobset, "config", "components", "crd", "bases", "jobset.x-k8s.io_jobsets.yaml"))
	kueue, err := ModuleDir(KueueModule)
	if err != nil {
		return nil, err
	}
	kueueCRDs, err := filepath.Glob(filepath.Join(kueue, "config", "components", "crd", "bases", "kueue.x-k8s.io_*.yaml"))
	if err != nil || len(kueueCRDs) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", kueue)
	}
	dra, err := ModuleDir(DRADriverModule)
	if err != nil {
		return nil, err
	}
	draCRDs, err := filepath.Glob(filepath.Join(dra, "deployments", "helm", "dra-driver-nvidia-gpu", "crds", "resource.nvidia.com_*.yaml"))
	if err != nil || len(draCRDs) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", dra)
	}
	return append(append(files, kueueCRDs...), draCRDs...), nil
}

// crds returns the CRD manifests the test server installs.
func crds() ([][]byte, error) {
	files, err := crdFiles()
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// Binaries a test may ask for (test/harness builds them): the control plane and etcd (every
// server), the MPI operator, Kubeflow Trainer's controller manager, JobSet, Kueue, the NVIDIA DRA
// driver's ComputeDomain controller.
const (
	ControlPlaneBuild            = "kube"
	EtcdBuild                    = "etcd"
	MPIOperatorBuild             = "mpi-operator"
	TrainerBuild                 = "trainer-controller-manager"
	JobSetBuild                  = "jobset"
	KueueBuild                   = "kueue"
	ComputeDomainControllerBuild = "compute-domain-controller"
)
