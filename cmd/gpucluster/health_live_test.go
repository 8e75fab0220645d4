package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// healthFixture is a log of internal/health/testdata without its provenance line.
func healthFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../internal/health/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	return rest
}

// startHealthCluster is the p5-efa cluster of bench run's tests with four GPU nodes: kwok runs
// the health jobs' pods and serves their logs (every node's diagnostics and all-reduce pass, the
// pair's launcher runs over EFA), and gpu-3 runs a training pod that holds its GPUs.
func startHealthCluster(t *testing.T) *benchCluster {
	t.Helper()
	logs := map[string]string{
		benchjobs.DiagContainer:      kubeapi.CRILogLines(healthFixture(t, "dcgm-pass-p5.log"), time.Now()),
		benchjobs.AllReduceContainer: kubeapi.CRILogLines(healthFixture(t, "node-allreduce-p5.log"), time.Now()),
		"launcher":                   kubeapi.CRILogLines(fixture(t, "efa-p5-2node.txt"), time.Now()),
	}
	c := startBenchClusterWith(t, "../../stacks/Pulumi.p5-efa.yaml", false, logs, kubeapi.MPIJobKwokOptions)
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"} {
		c.gpuNode(t, n, "")
	}
	busy := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "busy-train", "namespace": benchjobs.Namespace},
		"spec": map[string]any{"nodeName": "gpu-3", "tolerations": []any{map[string]any{"operator": "Exists"}},
			"containers": []any{map[string]any{"name": "train", "image": "train", "resources": map[string]any{"limits": map[string]any{topology.ResourceGPU: "8"}}}}}}
	if err := c.s.Create(busy); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *benchCluster) node(t *testing.T, name string) (labels, annotations map[string]any, taints []any) {
	t.Helper()
	n, err := c.s.Get(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := n["metadata"].(map[string]any)
	labels, _ = md["labels"].(map[string]any)
	annotations, _ = md["annotations"].(map[string]any)
	spec, _ := n["spec"].(map[string]any)
	taints, _ = spec["taints"].([]any)
	return labels, annotations, taints
}

func hasHealthTaint(taints []any) bool {
	return slices.ContainsFunc(taints, func(x any) bool {
		m, _ := x.(map[string]any)
		return m["key"] == topology.HealthTaint.Key && m["value"] == topology.HealthTaint.Value
	})
}

// healthLeft is what of a health run is still in the jobs' namespace.
func (c *benchCluster) healthLeft(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for _, kind := range benchjobs.MPIJobObjects {
			objs, err := c.s.List(map[string]any{"apiVersion": kind["apiVersion"], "kind": kind["kind"], "metadata": map[string]any{"namespace": benchjobs.Namespace}})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				md, _ := o["metadata"].(map[string]any)
				if labels, _ := md["labels"].(map[string]any); labels[topology.LabelHealthRun] != nil {
					left = append(left, kind["kind"].(string)+"/"+md["name"].(string))
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return strings.Join(left, " ")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestHealthOnP5 runs `gpucluster health --stack p5-efa` against the harness (the real
// kube-apiserver, scheduler, Job controller, garbage collector and MPI operator; kwok plays the
// nodes and serves the checks' logs): --dry-run changes nothing; the run leaves the busy node
// alone, checks the other three, fails gpu-1 on its diagnostics' memory error (label, taint and
// event, as the health gate marks a node), runs the pair all-reduce over the two that passed,
// gives them back, exits 1 and leaves no job behind.
func TestHealthOnP5(t *testing.T) {
	fastPolls(t)
	c := startHealthCluster(t)
	args := []string{"health", "--stack", "p5-efa", "--kubeconfig", c.kubeconfig, "--results", t.TempDir()}

	var out, errOut strings.Builder
	if code := run(append(args, "--dry-run"), &out, &errOut); code != exitOK ||
		!strings.Contains(out.String(), "3 node(s) to check: gpu-0, gpu-1, gpu-2") || !strings.Contains(out.String(), "busy: pod default/busy-train holds its GPUs") ||
		!strings.Contains(out.String(), "pcie.gpu_nvlinks_expected_up=18") || !strings.Contains(out.String(), "round 2: gpu-2 + gpu-0") {
		t.Fatalf("--dry-run: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2"} {
		if _, annotations, taints := c.node(t, n); hasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil {
			t.Fatalf("--dry-run changed %s: taints %v, annotations %v", n, taints, annotations)
		}
	}

	stop, err := c.s.ServeLogOnNode(benchjobs.Namespace, topology.LabelHealthCheck, topology.HealthCheckDiag, "gpu-1", benchjobs.DiagContainer,
		kubeapi.CRILogLines(healthFixture(t, "dcgm-memory-p5.log"), time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	code := run(args, &out, &errOut)
	stop()
	t.Logf("health: exit %d\n%s%s", code, out.String(), errOut.String())
	if code != exitFail || !strings.Contains(errOut.String(), "1 node(s) failed") {
		t.Fatalf("exit %d, want %d with gpu-1 failed\n%s%s", code, exitFail, out.String(), errOut.String())
	}
	for _, want := range []string{"gpu-1: dcgm-diag fail: level 2: memory GPU3: A memory mismatch", "gpu-0 + gpu-2: pair-allreduce pass",
		"gpu-3  gpu   skipped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the run's output lacks %q", want)
		}
	}
	labels, annotations, taints := c.node(t, "gpu-1")
	if labels[topology.LabelHealthFailed] != topology.HealthCheckDiag || !hasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil {
		t.Errorf("gpu-1 failed: labels %v, taints %v, annotations %v; want %s=%s and the health taint", labels, taints, annotations, topology.LabelHealthFailed, topology.HealthCheckDiag)
	}
	for _, n := range []string{"gpu-0", "gpu-2", "gpu-3"} {
		labels, annotations, taints := c.node(t, n)
		if hasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil || labels[topology.LabelHealthFailed] != nil {
			t.Errorf("%s not given back: labels %v, taints %v, annotations %v", n, labels, taints, annotations)
		}
	}
	events, err := c.s.List(map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"namespace": healthgate.EventNamespace}})
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
	if left := c.healthLeft(t); left != "" {
		t.Errorf("a minute after the run, still in the cluster: %s", left)
	}

	// Run again: gpu-1 is an earlier run's failure, checked again; it passes now and goes back.
	out.Reset()
	errOut.Reset()
	if code := run(args, &out, &errOut); code != exitOK {
		t.Fatalf("second run: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if labels, _, taints := c.node(t, "gpu-1"); labels[topology.LabelHealthFailed] != nil || hasHealthTaint(taints) {
		t.Errorf("gpu-1 passed the second run, still marked: labels %v, taints %v\n%s", labels, taints, out.String())
	}
	if !strings.Contains(out.String(), "an earlier failure cleared") {
		t.Errorf("the second run does not say it cleared gpu-1's failure:\n%s", out.String())
	}
}

// TestHealthInterrupted: Ctrl-C while the diagnostics run gives every held node back as it was
// (no taint, no annotation, no label), deletes the jobs, and judges no node.
func TestHealthInterrupted(t *testing.T) {
	fastPolls(t)
	c := startHealthCluster(t)
	w, _ := interruptOn(t, "dcgm-diag: started")
	var errOut strings.Builder
	code := run([]string{"health", "--stack", "p5-efa", "--kubeconfig", c.kubeconfig, "--results", t.TempDir()}, w, &errOut)
	if code != exitNoVerdict || !strings.Contains(w.b.String(), "interrupted") || !strings.Contains(w.b.String(), "given back as it was") {
		t.Errorf("interrupted: exit %d, want %d (no node judged)\n%s%s", code, exitNoVerdict, w.b.String(), errOut.String())
	}
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"} {
		if labels, annotations, taints := c.node(t, n); hasHealthTaint(taints) || annotations[topology.LabelHealthRun] != nil || labels[topology.LabelHealthFailed] != nil {
			t.Errorf("%s after Ctrl-C: labels %v, taints %v, annotations %v", n, labels, taints, annotations)
		}
	}
	if left := c.healthLeft(t); left != "" {
		t.Errorf("a minute after Ctrl-C, still in the cluster: %s", left)
	}
}
