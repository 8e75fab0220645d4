package healthlive

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/exitcode"
	"github.com/gpucluster/gpucluster/test/clilive"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestHealthOnP5 runs `gpucluster health --stack p5-efa` against the harness (the real
// kube-apiserver, scheduler, Job controller, garbage collector and MPI operator; kwok plays the
// nodes and serves the checks' logs): --dry-run changes nothing; the run leaves the busy node
// alone, checks the other three, fails gpu-1 on its diagnostics' memory error (label, taint and
// event, as the health gate marks a node), runs the pair all-reduce over the two that passed,
// gives them back, exits 1 and leaves no job behind.
func TestHealthOnP5(t *testing.T) {
	c := clilive.StartHealthCluster(t)
	args := []string{"health", "--stack", "p5-efa", "--kubeconfig", c.Kubeconfig, "--results", t.TempDir(), "--poll", clilive.FastPoll}

	if code, out, errOut := clilive.Run(t, append(args, "--dry-run")...); code != exitcode.OK ||
		!strings.Contains(out, "3 node(s) to check: gpu-0, gpu-1, gpu-2") || !strings.Contains(out, "busy: pod default/busy-train holds its GPUs") ||
		!strings.Contains(out, "pcie.gpu_nvlinks_expected_up=18") || !strings.Contains(out, "round 2: gpu-2 + gpu-0") {
		t.Fatalf("--dry-run: exit %d\n%s%s", code, out, errOut)
	}
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2"} {
		if _, annotations, taints := c.Node(t, n); clilive.HasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil {
			t.Fatalf("--dry-run changed %s: taints %v, annotations %v", n, taints, annotations)
		}
	}

	stop, err := c.S.ServeLogOnNode(benchjobs.Namespace, topology.LabelHealthCheck, topology.HealthCheckDiag, "gpu-1", benchjobs.DiagContainer,
		kubeapi.CRILogLines(clilive.HealthFixture(t, "dcgm-memory-p5.log"), time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := clilive.Run(t, args...)
	stop()
	t.Logf("health: exit %d\n%s%s", code, out, errOut)
	if code != exitcode.Fail || !strings.Contains(errOut, "1 node(s) failed") {
		t.Fatalf("exit %d, want %d with gpu-1 failed\n%s%s", code, exitcode.Fail, out, errOut)
	}
	for _, want := range []string{"gpu-1: dcgm-diag fail: level 2: memory GPU3: A memory mismatch", "gpu-0 + gpu-2: pair-allreduce pass",
		"gpu-3  gpu   skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("the run's output lacks %q", want)
		}
	}
	labels, annotations, taints := c.Node(t, "gpu-1")
	if labels[topology.LabelHealthFailed] != topology.HealthCheckDiag || !clilive.HasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil {
		t.Errorf("gpu-1 failed: labels %v, taints %v, annotations %v; want %s=%s and the health taint", labels, taints, annotations, topology.LabelHealthFailed, topology.HealthCheckDiag)
	}
	for _, n := range []string{"gpu-0", "gpu-2", "gpu-3"} {
		labels, annotations, taints := c.Node(t, n)
		if clilive.HasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil || labels[topology.LabelHealthFailed] != nil {
			t.Errorf("%s not given back: labels %v, taints %v, annotations %v", n, labels, taints, annotations)
		}
	}
	events, err := c.S.List(map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"namespace": healthgate.EventNamespace}})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range events {
		b, _ := json.Marshal(e)
		if obj, _ := e["involvedObject"].(map[string]any); obj["name"] == "gpu-1" && e["reason"] == healthgate.ReasonFailed && e["type"] == "Warning" {
			found = append(found, string(b))
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "memory GPU3: A memory mismatch was detected on GPU 3") {
		t.Errorf("gpu-1's Warning events: %v, want one with the diagnostics' evidence", found)
	}
	if left := c.HealthLeft(t); left != "" {
		t.Errorf("a minute after the run, still in the cluster: %s", left)
	}

	// Run again: gpu-1 is an earlier run's failure, checked again; it passes now and goes back.
	if code, out, errOut = clilive.Run(t, args...); code != exitcode.OK {
		t.Fatalf("second run: exit %d\n%s%s", code, out, errOut)
	}
	if labels, _, taints := c.Node(t, "gpu-1"); labels[topology.LabelHealthFailed] != nil || clilive.HasHealthTaint(taints) {
		t.Errorf("gpu-1 passed the second run, still marked: labels %v, taints %v\n%s", labels, taints, out)
	}
	if !strings.Contains(out, "an earlier failure cleared") {
		t.Errorf("the second run does not say it cleared gpu-1's failure:\n%s", out)
	}
}

// TestHealthInterrupted: Ctrl-C while the diagnostics run gives every held node back as it was
// (no taint, no annotation, no label), deletes the jobs, and judges no node.
func TestHealthInterrupted(t *testing.T) {
	c := clilive.StartHealthCluster(t)
	code, out, errOut := clilive.RunInterruptedOn(t, "dcgm-diag: started", "health", "--stack", "p5-efa", "--kubeconfig", c.Kubeconfig, "--results", t.TempDir(), "--poll", clilive.FastPoll)
	if code != exitcode.NoVerdict || !strings.Contains(out, "interrupted") || !strings.Contains(out, "given back as it was") {
		t.Errorf("interrupted: exit %d, want %d (no node judged)\n%s%s", code, exitcode.NoVerdict, out, errOut)
	}
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"} {
		if labels, annotations, taints := c.Node(t, n); clilive.HasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil || labels[topology.LabelHealthFailed] != nil {
			t.Errorf("%s after Ctrl-C: labels %v, taints %v, annotations %v", n, labels, taints, annotations)
		}
	}
	if left := c.HealthLeft(t); left != "" {
		t.Errorf("a minute after Ctrl-C, still in the cluster: %s", left)
	}
}
