package program

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// TestKueue: the Kueue the program installs is the release the test server's CRDs and manager
// come from; the release's chart (read from the module cache) takes the controller's node
// selector where the program sets it, and its configuration integrates the jobs gpucluster
// renders; on every stack that enables benchmarks the controller runs on the system nodes and
// each queue object follows the chart and goes with the cluster.
func TestKueue(t *testing.T) {
	if kueue.Version != kubeapi.KueueVersion || kueue.ChartVersion != strings.TrimPrefix(kueue.Version, "v") {
		t.Errorf("kueue %s (chart %s); the test server runs %s", kueue.Version, kueue.ChartVersion, kubeapi.KueueVersion)
	}
	mod, err := kubeapi.ModuleDir(kubeapi.KueueModule)
	if err != nil {
		t.Fatal(err)
	}
	var chart struct{ Version string }
	readYAML(t, filepath.Join(mod, "charts", "kueue", "Chart.yaml"), &chart)
	var values struct {
		ControllerManager map[string]any `yaml:"controllerManager"`
		ManagerConfig     struct {
			ControllerManagerConfigYaml string `yaml:"controllerManagerConfigYaml"`
		} `yaml:"managerConfig"`
	}
	readYAML(t, filepath.Join(mod, "charts", "kueue", "values.yaml"), &values)
	var config struct {
		Integrations struct{ Frameworks []string }
	}
	if err := yaml.Unmarshal([]byte(values.ManagerConfig.ControllerManagerConfigYaml), &config); err != nil {
		t.Fatal(err)
	}
	if _, ok := values.ControllerManager["nodeSelector"]; chart.Version != kueue.ChartVersion || !ok {
		t.Errorf("the release's chart is %s (controllerManager.nodeSelector: %v); gpucluster pins %s", chart.Version, ok, kueue.ChartVersion)
	}
	for _, f := range []string{"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"} {
		if !slices.Contains(config.Integrations.Frameworks, f) {
			t.Errorf("the chart's configuration does not integrate %s: %v", f, config.Integrations.Frameworks)
		}
	}
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		stack := filepath.Base(file)
		var charts []offline.Resource
		for _, c := range ev.ofType("kubernetes:helm.sh/v4:Chart") {
			if c.Input("chart") == kueue.ChartRef {
				charts = append(charts, c)
				if c.Input("version") != kueue.ChartVersion || !reflect.DeepEqual(c.Input("values"),
					map[string]any{"controllerManager": map[string]any{"nodeSelector": map[string]any{topology.LabelPool: topology.SystemPool}}}) {
					t.Errorf("%s: Kueue chart %v %v", stack, c.Input("version"), c.Input("values"))
				}
			}
		}
		enabled := ev.spec.Benchmarks.Enabled
		if len(charts) != map[bool]int{true: 1}[enabled] {
			t.Fatalf("%s: benchmarks %v, %d Kueue charts", stack, enabled, len(charts))
		}
		want := map[string]int{}
		if enabled {
			for _, o := range kueue.Objects(ev.spec.Pools, ev.spec.Labels()) {
				want[o["kind"].(string)]++
			}
		}
		got := map[string]int{}
		for _, kind := range []string{"Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"} {
			for _, r := range ev.ofType("kubernetes:" + topology.KueueAPIVersion + ":" + kind) {
				got[kind]++
				if !dependsOn(r, charts[0]) || r.Options.DeletedWith == "" {
					t.Errorf("%s: %s %s must follow the chart (its CRDs and webhooks) and go with the cluster", stack, kind, r.Name)
				}
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: queue objects %v, want %v", stack, got, want)
		}
	}
}
