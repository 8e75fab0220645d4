package program

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestTrainer: the Trainer the program installs is the release the test server's CRDs and
// controllers come from; its chart brings the JobSet release the Trainer requires; each runtime
// is the release's torch-distributed runtime (read from the module cache), unchanged but for
// hostIPC where the topology asks for it; and on every stack that enables benchmarks the chart
// runs on the system nodes, the runtimes follow it and go with the cluster, and the training
// pods' account mounts no token.
func TestTrainer(t *testing.T) {
	if trainer.Version != kubeapi.TrainerVersion || trainer.ChartVersion != strings.TrimPrefix(trainer.Version, "v") || trainer.JobSetVersion != kubeapi.JobSetVersion {
		t.Errorf("trainer %s (chart %s), JobSet %s; the test server runs Trainer %s and JobSet %s",
			trainer.Version, trainer.ChartVersion, trainer.JobSetVersion, kubeapi.TrainerVersion, kubeapi.JobSetVersion)
	}
	mod, err := kubeapi.ModuleDir(kubeapi.TrainerModule)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(mod, "@"+kubeapi.TrainerVersion) {
		t.Errorf("the harness builds the Trainer from %s, want %s", mod, kubeapi.TrainerVersion)
	}
	var chart struct {
		Version      string
		Dependencies []struct{ Name, Version string }
	}
	readYAML(t, filepath.Join(mod, "charts", "kubeflow-trainer", "Chart.yaml"), &chart)
	jobset := ""
	for _, d := range chart.Dependencies {
		if d.Name == "jobset" {
			jobset = d.Version
		}
	}
	if chart.Version != trainer.ChartVersion || "v"+jobset != trainer.JobSetVersion {
		t.Errorf("the release's chart is %s with JobSet %s; gpucluster pins %s and JobSet %s", chart.Version, jobset, trainer.ChartVersion, trainer.JobSetVersion)
	}
	var upstream map[string]any
	readYAML(t, filepath.Join(mod, "manifests", "base", "runtimes", "torch_distributed.yaml"), &upstream)
	upstream = normalize(t, upstream)

	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		charts := ev.ofType("kubernetes:helm.sh/v4:Chart")
		runtimes := ev.ofType("kubernetes:" + topology.TrainerAPIVersion + ":ClusterTrainingRuntime")
		var trainerCharts, trainerRuntimes []string
		for _, c := range charts {
			if c.Input("chart") == trainer.ChartRef {
				trainerCharts = append(trainerCharts, c.URN)
				values := c.Input("values").(map[string]any)
				system := map[string]any{topology.LabelPool: topology.SystemPool}
				if c.Input("version") != trainer.ChartVersion || !reflect.DeepEqual(values["manager"], map[string]any{"nodeSelector": system}) ||
					!reflect.DeepEqual(values["jobset"], map[string]any{"controller": map[string]any{"nodeSelector": system}}) {
					t.Errorf("%s: Trainer chart %v %v", filepath.Base(file), c.Input("version"), values)
				}
			}
		}
		for _, r := range runtimes {
			trainerRuntimes = append(trainerRuntimes, r.Name)
			if len(trainerCharts) != 1 || !dependsOn(r, offline.Resource{URN: trainerCharts[0]}) || r.Options.DeletedWith == "" {
				t.Errorf("%s: runtime %s must follow the Trainer's chart (its webhook) and go with the cluster: deletedWith %q", filepath.Base(file), r.Name, r.Options.DeletedWith)
			}
			got := normalize(t, map[string]any{"apiVersion": r.Input("apiVersion"), "kind": r.Input("kind"), "spec": r.Input("spec")})
			name := r.Input("metadata").(map[string]any)["name"]
			pod := got["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["replicatedJobs"].([]any)[0].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
			if name == topology.TrainingRuntimeHostIPC {
				if pod["hostIPC"] != true {
					t.Errorf("%s: %s without hostIPC", filepath.Base(file), name)
				}
				delete(pod, "hostIPC")
			}
			want := map[string]any{"apiVersion": upstream["apiVersion"], "kind": upstream["kind"], "spec": upstream["spec"]}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: runtime %s\n%v\nis not the release's\n%v", filepath.Base(file), name, got, want)
			}
		}
		accounts := 0
		for _, sa := range ev.ofType("kubernetes:core/v1:ServiceAccount") {
			if sa.Input("metadata").(map[string]any)["name"] == topology.TrainingServiceAccount {
				accounts++
				if sa.Input("automountServiceAccountToken") != false {
					t.Errorf("%s: the training pods' account mounts a token", filepath.Base(file))
				}
			}
		}
		if enabled := ev.spec.Benchmarks.Enabled; len(trainerCharts) != map[bool]int{true: 1}[enabled] || (len(trainerRuntimes) > 0) != enabled || accounts != len(trainerCharts) {
			t.Errorf("%s: benchmarks %v, Trainer charts %d, runtimes %v, training accounts %d", filepath.Base(file), enabled, len(trainerCharts), trainerRuntimes, accounts)
		}
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// normalize makes an object plain JSON values (numbers as float64), whatever decoded it.
func normalize(t *testing.T, v map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
