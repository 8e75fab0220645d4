package health

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// at is the instant the tests' stacks are read at: no test depends on the day it runs.
var at = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n") // the provenance line
	return rest
}

func p5Pool(t *testing.T) topology.PoolSpec {
	t.Helper()
	spec, err := topology.LoadStack("../../stacks/Pulumi.p5-efa.yaml", at)
	if err != nil {
		t.Fatal(err)
	}
	return spec.Pools[0]
}

// TestDiagVerdicts: each fixture of our own (testdata/README.md) gives the verdict its model
// says, naming the GPU and DCGM's message.
func TestDiagVerdicts(t *testing.T) {
	for _, tc := range []struct {
		file, status string
		evidence     []string
	}{
		{"dcgm-pass-p5.log", Pass, []string{"level 2: 24 results, none failed (DCGM 4.6.0)"}},
		{"dcgm-memory-p5.log", Fail, []string{"memory GPU3: A memory mismatch was detected on GPU 3"}},
		{"dcgm-nvlink-p5.log", Fail, []string{"pcie GPU5: Only 17 NvLinks are up out of the expected 18"}},
		{"dcgm-persistence-p5.log", Pass, []string{"no GPU to take out", "to mend on the node: software GPU0: Persistence Mode"}},
		{"dcgm3-memory-p4d.log", Fail, []string{"GPU Memory GPU1: A memory mismatch"}},
	} {
		c := judgeDiag(2, jobState{Ended: "Complete"}, fixture(t, tc.file))
		if c.Status != tc.status {
			t.Errorf("%s: %s (%s), want %s", tc.file, c.Status, c.Evidence, tc.status)
		}
		for _, e := range tc.evidence {
			if !strings.Contains(c.Evidence, e) {
				t.Errorf("%s: evidence %q lacks %q", tc.file, c.Evidence, e)
			}
		}
	}
}

// TestDiagThatDidNotComplete: a diagnostic that says nothing is unknown, never a pass.
func TestDiagThatDidNotComplete(t *testing.T) {
	pass := fixture(t, "dcgm-pass-p5.log")
	json, _, _ := strings.Cut(pass, topology.DiagExitMarker)
	for name, tc := range map[string]struct {
		log   string
		state jobState
		want  string
	}{
		"cut before its exit line":     {json, jobState{Ended: "Failed", Reason: "DeadlineExceeded"}, "without dcgmi's exit code"},
		"timed out (245)":              {json + topology.DiagExitMarker + "245\n", jobState{Ended: "Failed"}, "dcgmi exited 245"},
		"no log, pod pending":          {"", jobState{Reason: "its pod is still Pending: 0/4 nodes are available"}, "did not finish: its pod is still Pending"},
		"runtime error":                {`{"DCGM Diagnostic": {"version": "4.6.0", "runtime_error": "Unable to connect to host engine"}}` + "\n" + topology.DiagExitMarker + "255\n", jobState{Ended: "Failed"}, "Unable to connect"},
		"exit 0, every result passing": {json + topology.DiagExitMarker + "0\n", jobState{Ended: "Complete"}, ""},
	} {
		c := judgeDiag(2, tc.state, tc.log)
		want := Unknown
		if tc.want == "" {
			want = Pass
		}
		if c.Status != want || !strings.Contains(c.Evidence, tc.want) {
			t.Errorf("%s: %s: %s, want %s with %q", name, c.Status, c.Evidence, want, tc.want)
		}
	}
}

// TestNodeAllReduce: a node over NVLink passes its floor; one whose traffic fell to PCIe fails
// it; wrong results fail whatever the speed.
func TestNodeAllReduce(t *testing.T) {
	p := p5Pool(t)
	floor, _ := topology.NodeBusBWFloor(p)
	if floor != 225 {
		t.Fatalf("p5.48xlarge's floor %.0f GB/s, want half of H100's 450 GB/s one way", floor)
	}
	ok := judgeNode(topology.HealthCheckNodeAllReduce, p, 2, jobState{Ended: "Complete"}, fixture(t, "node-allreduce-p5.log"))
	if ok.Status != Pass || !strings.Contains(ok.Evidence, "busbw 469.9 GB/s at 16 GiB, over the floor of 225 GB/s") {
		t.Errorf("over NVLink: %s: %s", ok.Status, ok.Evidence)
	}
	slow := judgeNode(topology.HealthCheckNodeAllReduce, p, 2, jobState{Ended: "Complete"}, fixture(t, "node-allreduce-p5-pcie.log"))
	if slow.Status != Fail || !strings.Contains(slow.Evidence, "under the floor of 225 GB/s") {
		t.Errorf("over PCIe: %s: %s", slow.Status, slow.Evidence)
	}
	wrong := strings.Replace(fixture(t, "node-allreduce-p5.log"), "# Out of bounds values : 0 OK", "# Out of bounds values : 12 FAILED", 1)
	if c := judgeNode(topology.HealthCheckNodeAllReduce, p, 2, jobState{Ended: "Complete"}, wrong); c.Status != Fail || !strings.Contains(c.Evidence, "12 out-of-bounds") {
		t.Errorf("with wrong results: %s: %s", c.Status, c.Evidence)
	}
	if c := judgeNode(topology.HealthCheckNodeAllReduce, p, 2, jobState{Ended: "Failed", Reason: "BackoffLimitExceeded"}, "NCCL WARN Cuda failure 'out of memory'\n"); c.Status != Fail || !strings.Contains(c.Evidence, "out of memory") {
		t.Errorf("failed before a row: %s: %s", c.Status, c.Evidence)
	}
}

// TestPairAllReduce: the pair's launcher log over EFA (internal/bench's fixtures) passes; the
// same traffic over sockets, with the EFA counters flat, fails whatever NCCL printed.
func TestPairAllReduce(t *testing.T) {
	p := p5Pool(t)
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("../bench/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if c := judgePair(p, jobState{Ended: "Succeeded"}, read("efa-p5-2node.txt")); c.Status != Pass || !strings.Contains(c.Evidence, "EFA sent 3.07 TB, 1.15x the 2.66 TB") {
		t.Errorf("over EFA: %s: %s", c.Status, c.Evidence)
	}
	if c := judgePair(p, jobState{Ended: "Succeeded"}, read("efa-flat-sockets-p5.txt")); c.Status != Fail || !strings.Contains(c.Evidence, "EFA counters") {
		t.Errorf("over sockets: %s: %s", c.Status, c.Evidence)
	}
}

func node(name, pool string, labels map[string]string, taints ...topology.Taint) Node {
	var n Node
	n.Metadata.Name = name
	n.Metadata.Labels = map[string]string{topology.LabelPool: pool}
	for k, v := range labels {
		n.Metadata.Labels[k] = v
	}
	n.Spec.Taints = taints
	n.Status.Conditions = append(n.Status.Conditions, struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}{"Ready", "True"})
	return n
}

func gpuPod(name, node, phase, owner string) Pod {
	var p Pod
	p.Metadata.Name, p.Metadata.Namespace = name, "default"
	if owner != "" {
		p.Metadata.OwnerReferences = append(p.Metadata.OwnerReferences, struct {
			Kind string `json:"kind"`
		}{owner})
	}
	p.Spec.NodeName = node
	p.Status.Phase = phase
	p.Spec.Containers = append(p.Spec.Containers, struct {
		Resources struct {
			Requests map[string]string `json:"requests"`
			Limits   map[string]string `json:"limits"`
		} `json:"resources"`
	}{})
	p.Spec.Containers[0].Resources.Limits = map[string]string{topology.ResourceGPU: "8"}
	return p
}

// TestChoose: never a node whose GPUs a pod holds, one the gate has not passed or failed, one
// out of service; an earlier run's failure is checked again.
func TestChoose(t *testing.T) {
	spec, err := topology.LoadStack("../../stacks/Pulumi.p5-efa.yaml", at)
	if err != nil {
		t.Fatal(err)
	}
	pool := spec.Pools[0].Name
	cordoned := node("cordoned", pool, nil)
	cordoned.Spec.Unschedulable = true
	notReady := node("not-ready", pool, nil)
	notReady.Status.Conditions[0].Status = "False"
	ours := node("interrupted", pool, nil, topology.HealthTaint)
	ours.Metadata.Annotations = map[string]string{topology.LabelHealthRun: "20261206t100000z"}
	nodes := []Node{
		node("free", pool, nil),
		node("busy", pool, nil),
		node("agents-only", pool, nil),
		node("finished-job", pool, nil),
		node("gating", pool, nil, topology.HealthTaint),
		node("gate-failed", pool, map[string]string{topology.LabelHealthFailed: topology.HealthCheckNVLink}, topology.HealthTaint),
		node("deep-failed", pool, map[string]string{topology.LabelHealthFailed: topology.HealthCheckDiag}, topology.HealthTaint),
		ours, cordoned, notReady,
		node("other-stack", "not-a-pool-of-this-stack", nil),
	}
	pods := []Pod{gpuPod("train-0", "busy", "Running", "Job"), gpuPod("gate", "agents-only", "Running", "DaemonSet"), gpuPod("done", "finished-job", "Succeeded", "Job")}
	targets, skips := Choose(spec, nil, nodes, pods)
	var got []string
	for _, tg := range targets {
		got = append(got, tg.Node)
	}
	if want := "free agents-only finished-job deep-failed interrupted"; strings.Join(got, " ") != want {
		t.Errorf("checked %v, want %s", got, want)
	}
	why := map[string]string{}
	for _, s := range skips {
		why[s.Node] = s.Why
	}
	for n, w := range map[string]string{"busy": "busy: pod default/train-0 holds its GPUs", "gating": "has not passed yet", "gate-failed": "failed its health gate's nvlink check",
		"cordoned": "cordoned", "not-ready": "not Ready"} {
		if !strings.Contains(why[n], w) {
			t.Errorf("%s: skipped for %q, want %q", n, why[n], w)
		}
	}
	if _, ok := why["other-stack"]; ok || len(skips) != 5 {
		t.Errorf("skips %v: a node of no pool of the stack is not the stack's", skips)
	}
	for _, tg := range targets {
		if again := tg.Node == "deep-failed" || tg.Node == "interrupted"; tg.Again != again {
			t.Errorf("%s: Again %v", tg.Node, tg.Again)
		}
	}
	if only, _ := Choose(spec, []string{"no-such-pool"}, nodes, pods); len(only) != 0 {
		t.Errorf("--pool of another pool checked %v", only)
	}
}

// TestPairs: every node is in a pair; pairs of a round share no node.
func TestPairs(t *testing.T) {
	for n := 0; n <= 7; n++ {
		var nodes []string
		for i := range n {
			nodes = append(nodes, string(rune('a'+i)))
		}
		rounds := Pairs(nodes)
		seen := map[string]bool{}
		for _, round := range rounds {
			inRound := map[string]bool{}
			for _, p := range round {
				for _, x := range p {
					if inRound[x] {
						t.Errorf("%d nodes: %s twice in a round: %v", n, x, rounds)
					}
					inRound[x], seen[x] = true, true
				}
			}
		}
		if n >= 2 && len(seen) != n || n < 2 && len(rounds) != 0 {
			t.Errorf("%d nodes: rounds %v", n, rounds)
		}
	}
}

// TestDiagWrapperKeepsDcgmiExitCode runs the diagnostics job's command with a dcgmi of our own
// on PATH (a stand-in: no GPU here) that prints a fixture and exits 226: the log ends with the
// marker line the judge reads, and the container exits as dcgmi did.
func TestDiagWrapperKeepsDcgmiExitCode(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.json")
	json, _, _ := strings.Cut(fixture(t, "dcgm-nvlink-p5.log"), topology.DiagExitMarker)
	if err := os.WriteFile(doc, []byte(json), 0o644); err != nil {
		t.Fatal(err)
	}
	stub := "#!/bin/sh\necho \"$@\" > " + filepath.Join(dir, "args") + "\ncat " + doc + "\nexit 226\n"
	if err := os.WriteFile(filepath.Join(dir, "dcgmi"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := topology.DiagCommand(p5Pool(t), 2)
	c := exec.Command(cmd[0], cmd[1:]...)
	c.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	out, err := c.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 226 {
		t.Fatalf("exit %v, want dcgmi's 226", err)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	if got := strings.TrimSpace(string(args)); got != "diag -r 2 -j -t 900 --expectedNumEntities gpu:8 -p pcie.gpu_nvlinks_expected_up=18" {
		t.Errorf("dcgmi ran with %q", got)
	}
	if c := judgeDiag(2, jobState{Ended: "Failed"}, string(out)); c.Status != Fail || !strings.Contains(c.Evidence, "pcie GPU5: Only 17 NvLinks") {
		t.Errorf("the wrapped run's log: %s: %s", c.Status, c.Evidence)
	}
}
