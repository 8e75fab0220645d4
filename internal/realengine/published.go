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
	"github.com/gpucluster/gpucluster/internal/kubeapi"
	"github.com/gpucluster/gpucluster/internal/realengine/registry"
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
	subcharts, err := subcharts(trainerChart, map[string]string{"jobset": kubeapi.JobSetModule, "lws": kubeapi.LWSModule})
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
		trainer.ChartRef:   {Dir: trainerChart, Version: trainer.ChartVersion, Dependencies: subcharts},
		kueue.ChartRef:     {Dir: kueueChart, Version: kueue.ChartVersion},
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

// subcharts are the charts a chart's Chart.yaml depends on, as `helm dependency build` fetches
// them into its package: each from the module of the same release (modules names each
// dependency's module), which must be the version Chart.yaml asks for.
func subcharts(chartDir string, modules map[string]string) ([]registry.Chart, error) {
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
		module, ok := modules[d.Name]
		if !ok {
			return nil, fmt.Errorf("%s/Chart.yaml depends on chart %s, which no module here provides", chartDir, d.Name)
		}
		dir, err := kubeapi.ModuleDir(module)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(dir, "@v"+d.Version) {
			return nil, fmt.Errorf("%s/Chart.yaml depends on %s %s; the module cache holds %s", chartDir, d.Name, d.Version, filepath.Base(dir))
		}
		deps = append(deps, registry.Chart{Dir: filepath.Join(dir, "charts", d.Name), Version: d.Version})
	}
	return deps, nil
}
