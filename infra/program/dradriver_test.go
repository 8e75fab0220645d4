package program

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestDRADriver: the NVIDIA DRA driver the program installs is the release whose CRDs the test
// server installs (build/crds/go.mod); the release's chart (read from the module cache) has every
// value the program sets; exactly the stacks with an UltraServer pool install it, with each such
// pool's ComputeDomain following the chart and going with the cluster.
func TestDRADriver(t *testing.T) {
	gomod, err := os.ReadFile("../../test/kubeapi/build/crds/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if dradriver.Version != kubeapi.DRADriverVersion || !strings.Contains(string(gomod), kubeapi.DRADriverModule+" "+dradriver.Version) ||
		dradriver.ChartVersion != strings.TrimPrefix(dradriver.Version, "v") || dradriver.Module != kubeapi.DRADriverModule {
		t.Errorf("DRA driver %s (chart %s); the test server's CRDs come from %s", dradriver.Version, dradriver.ChartVersion, kubeapi.DRADriverVersion)
	}
	mod, err := kubeapi.ModuleDir(kubeapi.DRADriverModule)
	if err != nil {
		t.Fatal(err)
	}
	chartDir := filepath.Join(mod, "deployments", "helm", "dra-driver-nvidia-gpu")
	var chart struct{ Version string }
	readYAML(t, filepath.Join(chartDir, "Chart.yaml"), &chart)
	if chart.Version != dradriver.ChartVersion {
		t.Errorf("the release's chart is %s; gpucluster pins %s", chart.Version, dradriver.ChartVersion)
	}
	var values map[string]any
	readYAML(t, filepath.Join(chartDir, "values.yaml"), &values)
	for _, path := range []string{"nvidiaDriverRoot", "resources.gpus.enabled", "resources.computeDomains.enabled",
		"controller.nodeSelector", "kubeletPlugin.affinity", "kubeletPlugin.tolerations"} {
		var v any = values
		for _, k := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[k]
			if m == nil || !hasKey(m, k) {
				t.Errorf("the chart has no value %s: the program's would be ignored", path)
				break
			}
		}
	}
	installed := 0
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		stack := filepath.Base(file)
		// The UltraServer pools, by their instance type (the catalog's NVLink domain), not by
		// the component's own choice of pools.
		var pools []topology.PoolSpec
		for _, p := range ev.spec.Pools {
			if p.Instance.MultiNodeNVLink() {
				pools = append(pools, p)
			}
		}
		var charts []offline.Resource
		for _, c := range ev.ofType("kubernetes:helm.sh/v4:Chart") {
			if c.Input("chart") != dradriver.ChartRef {
				continue
			}
			charts = append(charts, c)
			if want := wantDRAValues[stack]; c.Input("version") != dradriver.ChartVersion || !reflect.DeepEqual(c.Input("values"), want) {
				t.Errorf("%s: DRA driver chart %v values\n%v\nwant\n%v", stack, c.Input("version"), c.Input("values"), want)
			}
		}
		domains := ev.ofType("kubernetes:" + topology.ComputeDomainAPIVersion + ":" + topology.ComputeDomainKind)
		if len(charts) != min(len(pools), 1) || len(domains) != len(pools) {
			t.Errorf("%s: %d UltraServer pools, %d DRA driver charts, %d ComputeDomains", stack, len(pools), len(charts), len(domains))
			continue
		}
		installed += len(charts)
		for _, d := range domains {
			if d.Options.DeletedWith == "" || !dependsOn(d, charts[0]) {
				t.Errorf("%s: ComputeDomain %s must follow the chart (its CRD) and go with the cluster", stack, d.Name)
			}
		}
	}
	if installed == 0 {
		t.Error("no stack installs the DRA driver: the gb200-nvl72 stack must")
	}
}

// wantDRAValues are the chart values each stack with an UltraServer pool must set, written out
// by hand from the chart's values.yaml and the EKS user guide ("Use P6e-GB200 UltraServers with
// Amazon EKS"): the GPUs stay the NVIDIA device plugin's (resources.gpus off), ComputeDomains on
// (their IMEX channels are what multi-node NVLink needs), the driver root is the host's (the EKS
// AL2023 NVIDIA image installs the driver there), the controller on the system nodes (the chart's
// default prefers control-plane nodes, which EKS does not have), and the kubelet plugin on the
// pool's nodes only, tolerating the GPU taint they carry and the health gate's startup taint.
var wantDRAValues = map[string]any{
	"Pulumi.gb200-nvl72.yaml": map[string]any{
		"nvidiaDriverRoot": "/",
		"resources": map[string]any{
			"gpus":           map[string]any{"enabled": false},
			"computeDomains": map[string]any{"enabled": true},
		},
		"controller": map[string]any{"nodeSelector": map[string]any{"gpucluster.io/pool": "system"}},
		"kubeletPlugin": map[string]any{
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
					map[string]any{"key": "gpucluster.io/pool", "operator": "In", "values": []any{"nvl"}},
				}}},
			}}},
			"tolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
				map[string]any{"key": "gpucluster.io/health", "operator": "Equal", "value": "checking", "effect": "NoSchedule"}},
		},
	},
}

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }
