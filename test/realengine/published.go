package realengine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/mpioperator"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/gpucluster/gpucluster/test/realengine/registry"
)

// Published starts the registry stand-in with what the program's `pulumi up` fetches from the
// internet, as the upstream releases publish it: the charts (at the references and versions the
// components name) packaged from their sources in the module cache at the same releases, and the
// MPI operator's CRD manifest.
func Published() (*registry.Server, error) {
	dir := func(module string, elem ...string) (string, error) {
		d, err := kubeapi.ModuleDir(module)
		return filepath.Join(append([]string{d}, elem...)...), err
	}
	karpenterChart, err := dir(kubeapi.KarpenterModule, "charts", "karpenter")
	if err != nil {
		return nil, err
	}
	karpenterCRDs, _ := dir(kubeapi.KarpenterModule, "pkg", "apis", "crds")
	trainerChart, err := dir(kubeapi.TrainerModule, "charts", "kubeflow-trainer")
	if err != nil {
		return nil, err
	}
	subcharts, err := subcharts(trainerChart, map[string]subchart{
		// JobSet's release stamps its image and appVersion into the chart it publishes
		// (hack/helm-chart-package.sh:48,50 at v0.12.0); the Trainer's package carries that chart.
		"jobset": {kubeapi.JobSetModule, map[string]any{"image.repository": jobSetImage,
			"image.tag": kubeapi.JobSetVersion, "image.pullPolicy": "IfNotPresent"}, kubeapi.JobSetVersion},
		// Off in gpucluster's values: unstamped.
		"lws": {module: kubeapi.LWSModule}})
	if err != nil {
		return nil, err
	}
	kueueChart, err := dir(kubeapi.KueueModule, "charts", "kueue")
	if err != nil {
		return nil, err
	}
	draChart, err := dir(kubeapi.DRADriverModule, "deployments", "helm", "dra-driver-nvidia-gpu")
	if err != nil {
		return nil, err
	}
	mpiCRD, err := dir(kubeapi.MPIOperatorModule, "manifests", "base", "kubeflow.org_mpijobs.yaml")
	if err != nil {
		return nil, err
	}
	charts := map[string]registry.Chart{
		// Karpenter's release stamps the version into Chart.yaml and the controller image into
		// values.yaml when it packages the chart (hack/release/common.sh): the tree at the tag
		// carries the previous release's numbers. The image digest is the built image's, which
		// nothing here knows, so the controller is pulled by tag. crds/ is a link to
		// pkg/apis/crds, which the module zip leaves out.
		karpenter.ChartRef: {Dir: karpenterChart, Version: karpenter.ChartVersion, AppVersion: karpenter.ChartVersion, CRDs: karpenterCRDs,
			Values: map[string]any{"controller.image.tag": karpenter.ChartVersion, "controller.image.digest": ""}},
		trainer.ChartRef: {Dir: trainerChart, Version: trainer.ChartVersion, Dependencies: subcharts},
		// Kueue's release stamps the promoted image into the chart it publishes
		// (hack/helm-chart-package.sh:75,78,79 at v0.19.2); the tree at the tag carries the
		// staging image of the release branch.
		kueue.ChartRef: {Dir: kueueChart, Version: kueue.ChartVersion, Values: map[string]any{
			"controllerManager.manager.image.repository": kueueImage, "controllerManager.manager.image.tag": kubeapi.KueueVersion,
			"controllerManager.manager.image.pullPolicy": "IfNotPresent",
			"kueueViz.backend.image.repository":          "registry.k8s.io/kueue/kueueviz-backend", "kueueViz.backend.image.tag": kubeapi.KueueVersion,
			"kueueViz.backend.image.pullPolicy":  "IfNotPresent",
			"kueueViz.frontend.image.repository": "registry.k8s.io/kueue/kueueviz-frontend", "kueueViz.frontend.image.tag": kubeapi.KueueVersion,
			"kueueViz.frontend.image.pullPolicy": "IfNotPresent"}},
		dradriver.ChartRef: {Dir: draChart, Version: dradriver.ChartVersion},
	}
	s, err := registry.New()
	if err != nil {
		return nil, err
	}
	for ref, c := range charts {
		if err := s.AddChart(ref, c); err != nil {
			s.Close()
			return nil, err
		}
	}
	crd, err := os.ReadFile(mpiCRD)
	if err == nil {
		err = s.AddFile(mpioperator.CRDURL, crd)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// subchart is where a dependency's chart comes from: its module, and what its release stamps
// into the chart it publishes (values and appVersion).
type subchart struct {
	module     string
	values     map[string]any
	appVersion string
}

// subcharts are the charts a chart's Chart.yaml depends on, as `helm dependency build` fetches
// them into its package: each from the module of the same release (modules names each
// dependency's), which must be the version Chart.yaml asks for, stamped as its release publishes it.
func subcharts(chartDir string, modules map[string]subchart) ([]registry.Chart, error) {
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		return nil, err
	}
	var chart struct {
		Dependencies []struct{ Name, Version string }
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		return nil, fmt.Errorf("%s/Chart.yaml: %w", chartDir, err)
	}
	var deps []registry.Chart
	for _, d := range chart.Dependencies {
		sub, ok := modules[d.Name]
		if !ok {
			return nil, fmt.Errorf("%s/Chart.yaml depends on chart %s, which no module here provides", chartDir, d.Name)
		}
		dir, err := kubeapi.ModuleDir(sub.module)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(dir, "@v"+d.Version) {
			return nil, fmt.Errorf("%s/Chart.yaml depends on %s %s; the module cache holds %s", chartDir, d.Name, d.Version, filepath.Base(dir))
		}
		deps = append(deps, registry.Chart{Dir: filepath.Join(dir, "charts", d.Name), Version: d.Version, AppVersion: sub.appVersion, Values: sub.values})
	}
	return deps, nil
}

// The images of the operators' pods as the published charts render them with gpucluster's
// values, and as components/mpioperator names its own: the kubelet stand-in runs their pods with
// the binaries the harness built from the same releases, at each image's entry point (the
// releases' Dockerfiles: ENTRYPOINT ["/manager"] for Kueue, Kubeflow Trainer and JobSet,
// ["/opt/mpi-operator"] for the MPI operator).
const (
	kueueImage  = "registry.k8s.io/kueue/kueue"
	jobSetImage = "registry.k8s.io/jobset/jobset"
	// trainerImage is what the chart's trainer.image helper renders at its defaults
	// (templates/_helpers.tpl: registry/repository:v<chart version>); its release stamps nothing.
	trainerImage = "ghcr.io/kubeflow/trainer/trainer-controller-manager"
)

// OperatorImages are the images whose pods run for real in the tier.
func OperatorImages() ([]kubeapi.RunImage, error) {
	templates, err := kubeapi.DRADriverTemplates()
	if err != nil {
		return nil, err
	}
	return []kubeapi.RunImage{
		{Image: kueueImage + ":" + kubeapi.KueueVersion, Entrypoint: "/manager", Build: kubeapi.KueueBuild},
		{Image: trainerImage + ":" + kubeapi.TrainerVersion, Entrypoint: "/manager", Build: kubeapi.TrainerBuild},
		{Image: jobSetImage + ":" + kubeapi.JobSetVersion, Entrypoint: "/manager", Build: kubeapi.JobSetBuild},
		{Image: mpioperator.Image, Entrypoint: "/opt/mpi-operator", Build: kubeapi.MPIOperatorBuild},
		// The NVIDIA DRA driver's one image, run for its controller's pods: its Dockerfile
		// (deployments/container/Dockerfile) puts compute-domain-controller at /usr/bin, and
		// its templates where the controller reads them (kubeapi.DRADriverTemplates). The kubelet
		// plugin's pods share the image but have an init container: the stand-in runs nothing
		// of them (they need GPU nodes), nor of the ComputeDomain daemons' (no node carries the
		// label that selects them: only the kubelet plugin sets it).
		{Image: kubeapi.DRADriverImage, Entrypoint: "/usr/bin/compute-domain-controller",
			Build: kubeapi.ComputeDomainControllerBuild, Dirs: map[string]string{kubeapi.DRADriverTemplatesPath: templates}},
	}, nil
}
