package kubeapi

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTrainerAndJobSetRunATrainJob: the release's own torch-distributed runtime and a TrainJob
// of two nodes become, through the real Trainer, JobSet and Job controllers, two pods carrying
// the Trainer's PET_* variables; the Trainer's webhook refuses a TrainJob that sets one itself.
func TestTrainerAndJobSetRunATrainJob(t *testing.T) {
	s := StartForTest(t)
	must(t, s.StartJobController())
	stopJobSet, err := s.StartJobSet()
	must(t, err)
	defer stopJobSet()
	stopTrainer, err := s.StartTrainer()
	must(t, err)
	defer stopTrainer()
	createReleaseRuntime(t, s)

	job := func(name string, env ...any) map[string]any {
		trainer := map[string]any{"image": "example/train:1", "command": []any{"torchrun", "train.py"}, "numNodes": 2, "numProcPerNode": 4}
		if env != nil {
			trainer["env"] = env
		}
		return map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"runtimeRef": map[string]any{"name": "torch-distributed"}, "trainer": trainer}}
	}
	var rejected *RejectedError
	if err := s.Create(job("sets-pet", map[string]any{"name": "PET_NNODES", "value": "2"})); !errors.As(err, &rejected) || !strings.Contains(err.Error(), "PET_NNODES") {
		t.Errorf("a TrainJob setting PET_NNODES: %v, want the Trainer's webhook to refuse it", err)
	}
	must(t, s.Create(job("llama")))
	var pods []Pod
	for deadline := time.Now().Add(90 * time.Second); len(pods) < 2; time.Sleep(500 * time.Millisecond) {
		if pods, err = s.Pods("default", "jobset.sigs.k8s.io/jobset-name=llama"); err != nil || time.Now().After(deadline) {
			t.Fatalf("%d pods (%v)\n--- trainer:\n%s\n--- jobset:\n%s", len(pods), err, s.logTail("trainer-controller-manager"), s.logTail("jobset-controller"))
		}
	}
	for _, p := range pods {
		pod, err := s.Get(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": p.Name, "namespace": "default"}})
		must(t, err)
		env := map[string]string{}
		c := pod["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		for _, e := range c["env"].([]any) {
			e := e.(map[string]any)
			v, _ := e["value"].(string)
			if e["valueFrom"] != nil {
				v = "<from>"
			}
			env[e["name"].(string)] = v
		}
		if env["PET_NNODES"] != "2" || env["PET_NPROC_PER_NODE"] != "4" || env["PET_NODE_RANK"] != "<from>" || env["PET_MASTER_ADDR"] != "llama-node-0-0.llama" {
			t.Errorf("pod %s env %v", p.Name, env)
		}
	}
}

// TestKueueAdmitsTrainJobsWhole: with a ClusterQueue of 8 GPUs, two TrainJobs of two 4-GPU
// nodes each queue in Kueue; the first is admitted and gets both its pods, the second stays
// suspended with none (never half of it), and is admitted whole once the first is gone.
func TestKueueAdmitsTrainJobsWhole(t *testing.T) {
	s := StartForTest(t)
	must(t, s.StartJobController())
	must(t, s.StartGarbageCollector())
	stopJobSet, err := s.StartJobSet()
	must(t, err)
	defer stopJobSet()
	stopTrainer, err := s.StartTrainer()
	must(t, err)
	defer stopTrainer()
	stopKueue, err := s.StartKueue()
	must(t, err)
	defer stopKueue()
	createReleaseRuntime(t, s)
	const kueueAPI = "kueue.x-k8s.io/v1beta2"
	must(t, s.Create(map[string]any{"apiVersion": kueueAPI, "kind": "ResourceFlavor", "metadata": map[string]any{"name": "gpu"},
		"spec": map[string]any{"nodeLabels": map[string]any{"pool": "gpu"}}}))
	quota := func(name, q string) map[string]any { return map[string]any{"name": name, "nominalQuota": q} }
	must(t, s.Create(map[string]any{"apiVersion": kueueAPI, "kind": "ClusterQueue", "metadata": map[string]any{"name": "gpu"},
		"spec": map[string]any{"namespaceSelector": map[string]any{}, "queueingStrategy": "BestEffortFIFO",
			"resourceGroups": []any{map[string]any{"coveredResources": []any{"cpu", "memory", "nvidia.com/gpu"},
				"flavors": []any{map[string]any{"name": "gpu", "resources": []any{quota("cpu", "64"), quota("memory", "256Gi"), quota("nvidia.com/gpu", "8")}}}}}}}))
	must(t, s.Create(map[string]any{"apiVersion": kueueAPI, "kind": "LocalQueue", "metadata": map[string]any{"name": "gpu", "namespace": "default"},
		"spec": map[string]any{"clusterQueue": "gpu"}}))

	job := func(name string) map[string]any {
		res := map[string]any{"nvidia.com/gpu": "4", "cpu": "8", "memory": "32Gi"}
		trainer := map[string]any{"image": "example/train:1", "command": []any{"torchrun", "train.py"}, "numNodes": 2, "numProcPerNode": 4,
			"resourcesPerNode": map[string]any{"requests": res, "limits": res}}
		return map[string]any{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
			"metadata": map[string]any{"name": name, "namespace": "default", "labels": map[string]any{"kueue.x-k8s.io/queue-name": "gpu"}},
			"spec":     map[string]any{"runtimeRef": map[string]any{"name": "torch-distributed"}, "trainer": trainer}}
	}
	pods := func(name string, want int, within time.Duration) {
		t.Helper()
		var got []Pod
		for deadline := time.Now().Add(within); ; time.Sleep(500 * time.Millisecond) {
			got, err = s.Pods("default", "jobset.sigs.k8s.io/jobset-name="+name)
			if err == nil && len(got) == want && want > 0 {
				return
			}
			if time.Now().After(deadline) {
				if len(got) == want {
					return
				}
				t.Fatalf("%s: %d pods, want %d (%v)\n--- kueue:\n%s", name, len(got), want, err, s.logTail("kueue"))
			}
		}
	}
	first, second := job("first"), job("second")
	must(t, s.Create(first))
	pods("first", 2, 90*time.Second)
	must(t, s.Create(second))
	pods("second", 0, 15*time.Second)
	got, err := s.Get(second)
	must(t, err)
	if got["spec"].(map[string]any)["suspend"] != true {
		t.Errorf("the second TrainJob runs without quota: %v", got["spec"])
	}
	must(t, s.Delete(first))
	pods("second", 2, 90*time.Second)
}

// createReleaseRuntime creates the default namespace's service account and the Trainer release's
// own torch-distributed runtime, read from the module cache.
func createReleaseRuntime(t *testing.T, s *Server) {
	t.Helper()
	must(t, s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "default"}}))
	mod, err := ModuleDir(TrainerModule)
	must(t, err)
	raw, err := os.ReadFile(filepath.Join(mod, "manifests", "base", "runtimes", "torch_distributed.yaml"))
	must(t, err)
	runtime, err := yamlToObject(raw)
	must(t, err)
	must(t, s.Create(runtime))
}
