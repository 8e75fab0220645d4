package kubeapi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKwokRunsAJobsPodAndServesItsLog: with kwok as the kubelet of a node the test registers,
// the real scheduler binds a Job's pod to it, kwok runs it to completion, the real Job controller
// completes the Job, and `kubectl logs` reads the pod's log through the API server from the file
// a Logs object names.
func TestKwokRunsAJobsPodAndServesItsLog(t *testing.T) {
	s := StartForTest(t)
	for _, start := range []func() error{s.StartScheduler, s.StartJobController, s.StartKwok} {
		must(t, start())
	}
	// The namespace's default account, which the harness has no controller to make.
	must(t, s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "default"}}))
	must(t, s.CreateKwokNode(KwokNode("gpu-0", map[string]string{"gpucluster.io/pool": "gpu"}, nil, map[string]string{"cpu": "8", "memory": "32Gi", "pods": "110"})))
	must(t, s.Create(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "nccl", "namespace": "default"},
		"spec": map[string]any{"backoffLimit": 0, "template": map[string]any{"spec": map[string]any{
			"restartPolicy": "Never", "nodeSelector": map[string]any{"gpucluster.io/pool": "gpu"},
			"containers": []any{map[string]any{"name": "main", "image": "nccl-tests"}}}}}}))

	var pod string
	deadline := time.Now().Add(time.Minute)
	for {
		job, err := s.Get(map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "nccl", "namespace": "default"}})
		must(t, err)
		pods, err := s.Pods("default", "job-name=nccl")
		must(t, err)
		if len(pods) == 1 {
			pod = pods[0].Name
		}
		status, _ := job["status"].(map[string]any)
		if succeeded, _ := status["succeeded"].(float64); succeeded == 1 && pod != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Job did not complete on kwok's node in a minute: %v, pods %+v\n%s", status, pods, s.logTail("kwok"))
		}
		time.Sleep(200 * time.Millisecond)
	}

	text := "# nccl-tests version 2.17.6 nccl-headers=22803 nccl-library=22803\n#  Rank  0 Group  0 Pid      1 on      gpu-0 device  0 [0000:00:00] NVIDIA H100 80GB HBM3\n"
	file := filepath.Join(t.TempDir(), "main.log")
	must(t, os.WriteFile(file, []byte(CRILogLines(text, time.Now())), 0o644))
	must(t, s.Create(KwokLogs("default", pod, "main", file)))
	kubeconfig, err := s.AdminKubeconfig()
	must(t, err)
	deadline = time.Now().Add(30 * time.Second)
	for {
		out, err := exec.Command("kubectl", "--kubeconfig", kubeconfig, "logs", "-n", "default", pod, "-c", "main").CombinedOutput()
		if err == nil && string(out) == text {
			return
		}
		if time.Now().After(deadline) { // kwok reads its Logs objects by watch: give it a moment
			t.Fatalf("kubectl logs %s: %v\n%q\nwant %q\n%s", pod, err, out, text, s.logTail("kwok"))
		}
		if err == nil && !strings.HasPrefix(text, string(out)) {
			t.Fatalf("kubectl logs %s: %q, want %q", pod, out, text)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestKubeletStandInLeavesKwokNodesToKwok: with the kubelet stand-in and kwok side by side (the
// real-engine tier runs the operators' pods with one and the benchmark's with the other), each
// plays only its own nodes. A pod bound to a kwok node before kwok runs stays Pending while the
// stand-in starts the pod bound after it to its own node (its queue is first in, first out);
// once kwok runs, kwok starts the first, and a pod deleted on kwok's node goes (kwok's
// deletion stage).
func TestKubeletStandInLeavesKwokNodesToKwok(t *testing.T) {
	s := StartForTest(t)
	must(t, s.StartKubeletStandIn())
	must(t, s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "default"}}))
	must(t, s.CreateReadyNode(Node("system-0", map[string]string{"gpucluster.io/pool": "system"}, nil, SystemNodeAllocatable)))
	must(t, s.Create(KwokNode("gpu-0", map[string]string{"gpucluster.io/pool": "gpu"}, nil, map[string]string{"cpu": "8", "memory": "32Gi", "pods": "110"})))
	pod := func(name, node string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "default"},
			"spec": map[string]any{"nodeName": node, "tolerations": []any{map[string]any{"operator": "Exists"}},
				"containers": []any{map[string]any{"name": "main", "image": name}}}}
	}
	must(t, s.Create(pod("on-kwok", "gpu-0")))
	must(t, s.Create(pod("on-stand-in", "system-0")))
	ready := func(name string) (found, isReady bool) {
		pods, err := s.Pods("default", "")
		must(t, err)
		for _, p := range pods {
			if p.Name == name {
				return true, p.Ready
			}
		}
		return false, false
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in 30 s\n%s\n%s", what, s.PodLogs(), s.logTail("kwok"))
			}
		}
	}
	waitFor("the stand-in starts the pod on its node", func() bool { _, r := ready("on-stand-in"); return r })
	if _, r := ready("on-kwok"); r {
		t.Fatal("the stand-in started the pod on kwok's node")
	}
	must(t, s.StartKwok())
	waitFor("kwok starts the pod on its node", func() bool { _, r := ready("on-kwok"); return r })
	must(t, s.Delete(pod("on-kwok", "gpu-0")))
	waitFor("kwok finishes the deletion on its node", func() bool { found, _ := ready("on-kwok"); return !found })
}
