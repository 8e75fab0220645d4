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
