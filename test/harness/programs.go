// Package harness is the test harness's programs: everything the tests run that is not
// gpucluster's own code — etcd, the Kubernetes control plane and the operators, the Pulumi CLI,
// the pulumi-kubernetes provider and pulumi-eks's provider from npm. `make harness` (go run
// ./test/harness/cmd/harness) builds them into a cache directory, once, outside any test's
// timeout; the tests only look them up (Binary) and fail at once, naming that command, when one
// is missing. Karpenter keeps its test tools the same way: `make toolchain` before `make test`.
package harness

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gpucluster/gpucluster/internal/preflight"
)

// Versions of what the harness builds (the build modules' go.mod pin the same; a test holds
// them together).
const (
	KubernetesVersion = "v1.36.2"
	EtcdVersion       = "v3.6.5"
	KwokVersion       = "v0.8.0"
	PulumiVersion     = "v" + preflight.TestedPulumiVersion
)

// Program is one build of the harness: the binaries of one build module, compiled by one `go
// build` (so that the libraries they share compile once), or an `npm ci` of a package lock.
type Program struct {
	Name string
	// Module is the build module's directory, relative to the repository root.
	Module string
	// Packages are the main packages to build: "./dir" inside the module, or an import path the
	// module requires (its go.mod lists it as a tool). Each binary is named as go build names
	// it: the last element of its import path.
	Packages []string
	LDFlags  string
	// NPM: the program is the module directory's package-lock.json, installed with npm ci.
	NPM bool
	// Generated are files the build adds to the build module (by path inside it) with go build
	// -overlay, given the directory of a module the build requires: a main package whose
	// go:embed files its module's zip does not carry, because the upstream build writes them
	// first (go generate). The go command refuses an overlay inside the module cache, so the
	// package is copied beside them, never written to the repository or the cache.
	Generated func(moduleDir func(module string) (string, error)) (map[string][]byte, error)
	// About says in a few words what the program is, for the progress lines.
	About string
}

// Programs are every program the tests run, the longest build first: Build starts them in this
// order, two at a time.
var Programs = []Program{
	{
		Name:      "kubeprovider",
		Module:    "test/realengine/build/kubeprovider",
		Packages:  []string{"./" + kubernetesProviderCommand},
		LDFlags:   "-X " + KubernetesProviderModule + "/pkg/version.Version=" + KubernetesProviderVersion,
		Generated: kubernetesProviderEmbeds,
		About:     "the pulumi-kubernetes provider " + KubernetesProviderVersion,
	},
	{
		Name:   "kube",
		Module: "test/kubeapi/build/kube",
		// The control plane (kube-apiserver, kube-scheduler and the controllers the tests run, one
		// binary) and the operators, in one build at one Kubernetes version, so that the libraries
		// they share (k8s.io/api, client-go, apiserver, kube-scheduler's framework) compile once.
		Packages: []string{".", "./mpi-operator",
			"github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager", "sigs.k8s.io/jobset", "sigs.k8s.io/kueue/cmd/kueue",
			"sigs.k8s.io/dra-driver-nvidia-gpu/cmd/compute-domain-controller"},
		LDFlags: kubernetesVersionFlags(),
		About:   "kube-apiserver, kube-scheduler, controllers " + KubernetesVersion + "; the MPI operator, Kubeflow Trainer, JobSet, Kueue, the DRA driver's ComputeDomain controller",
	},
	{
		Name:     "pulumi",
		Module:   "test/realengine/build/pulumi",
		Packages: []string{"github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"},
		// The Automation API refuses a CLI that does not know its version.
		LDFlags: "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=" + PulumiVersion,
		About:   "the Pulumi CLI " + PulumiVersion,
	},
	{
		Name:     "kwok",
		Module:   "test/kubeapi/build/kwok",
		Packages: []string{"sigs.k8s.io/kwok/cmd/kwok"},
		About:    "kwok " + KwokVersion + ", the kubelet of nodes no instance backs (a stand-in: no container runs)",
	},
	{
		Name:     "etcd",
		Module:   "test/kubeapi/build/etcd",
		Packages: []string{"."},
		About:    "etcd " + EtcdVersion,
	},
	{
		Name:   "eksprovider",
		Module: "test/realengine/eksprovider",
		NPM:    true,
		About:  "pulumi-eks's provider from npm (package-lock.json)",
	},
}

// kubernetesVersionFlags stamp the control plane as a release build is: unstamped, the server
// reports v0.0.0-master+$Format:%H$, which is no semantic version (Helm's
// .Capabilities.KubeVersion and every client that compares versions fail on it). The operators
// of the same build link component-base too, and report the Kubernetes libraries they run on.
func kubernetesVersionFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	return "-X k8s.io/component-base/version.gitVersion=" + KubernetesVersion +
		" -X k8s.io/component-base/version.gitMajor=" + major + " -X k8s.io/component-base/version.gitMinor=" + minor
}

// binaryName is the file go build writes for a main package: the last element of its import
// path (for ".", the module's path as its go.mod names it).
func binaryName(module, pkg string) string {
	if pkg != "." {
		return path.Base(pkg)
	}
	data, _ := os.ReadFile(filepath.Join(RepoRoot(), module, "go.mod"))
	for _, line := range strings.Split(string(data), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return path.Base(strings.Trim(strings.TrimSpace(name), `"`))
		}
	}
	return path.Base(module)
}

// Binaries are the files a program's build leaves in its directory.
func (p Program) Binaries() []string {
	var names []string
	for _, pkg := range p.Packages {
		names = append(names, binaryName(p.Module, pkg))
	}
	return names
}
