package benchrunlive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/deviceplugin"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/benchrun"
	"github.com/gpucluster/gpucluster/internal/efareading"
	"github.com/gpucluster/gpucluster/internal/exitcode"
	"github.com/gpucluster/gpucluster/test/clilive"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestBenchRunOnP5 runs `gpucluster bench run --stack p5-efa` against the harness: refused
// while a node lacks its EFA device plugin (nothing applied), then, with the cluster as planned,
// from the MPIJob's creation to RESULT.md: Kueue admits it, the MPI operator makes the workers on
// the pool's nodes and the launcher on a system node, kwok runs and finishes it; every pod's log
// is in the run's directory, bench report's verdict, doctor's reading and the chart beside them,
// and nothing of the job is left in the cluster.
func TestBenchRunOnP5(t *testing.T) {
	c := clilive.StartBenchCluster(t, "p5-efa", true, clilive.Fixture(t, "mpijob-p5-eks-excerpt.txt"))
	// One node's EFA device plugin gone (the commonest fault): one error is enough to refuse.
	efaPod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": deviceplugin.EFAName + "-gpu-1", "namespace": "kube-system"}}
	if err := c.S.Delete(efaPod); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	args := []string{"bench", "run", "--stack", "p5-efa", "--kubeconfig", c.Kubeconfig, "--results", results, "--poll", clilive.FastPoll}
	if code, out, errOut := clilive.Run(t, args...); code != exitcode.Fail || !strings.Contains(errOut, "verify finds 1 error(s) on pool gpu") ||
		!strings.Contains(errOut, "nothing was applied") || !strings.Contains(errOut, "agent-missing") {
		t.Fatalf("with one node's EFA device plugin missing: exit %d\n%s%s", code, out, errOut)
	}
	if left := c.Left(t); left != "" {
		t.Fatalf("a refused run applied %s", left)
	}
	// The missing pod, as the DaemonSet controller would make it again.
	if err := c.S.Create(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": deviceplugin.EFAName + "-gpu-1-new", "namespace": "kube-system", "labels": map[string]any{"app.kubernetes.io/name": deviceplugin.EFAName}},
		"spec":     map[string]any{"nodeName": "gpu-1", "tolerations": []any{map[string]any{"operator": "Exists"}}, "containers": []any{map[string]any{"name": "agent", "image": "efa"}}}}); err != nil {
		t.Fatal(err)
	}
	// The fixture's 2 GiB row: 448.22 GB/s out of place, 102% of AWS's published 437.79 GB/s.
	if code := checkRunToResult(t, c, args, "verdict: pass", "busbw 448.22 GB/s at 2 GiB is 102% of the published 437.79 GB/s"); code != exitcode.OK {
		t.Errorf("p5-efa: exit %d, want %d (its verdict passes)", code, exitcode.OK)
	}
}

// TestBenchRunOnG6e: the same on g6e-efa, from creation to RESULT.md; no figure is published
// for it, so the verdict is unknown and bench run exits 3, as bench report does.
func TestBenchRunOnG6e(t *testing.T) {
	c := clilive.StartBenchCluster(t, "g6e-efa", true, clilive.G6eLauncherLog(t))
	// The log's best row: 10.97 GB/s at 4 GiB; its launcher's EFA readings: each node's device
	// sent about 571 GB during the run.
	if code := checkRunToResult(t, c, []string{"bench", "run", "--stack", "g6e-efa", "--kubeconfig", c.Kubeconfig, "--results", t.TempDir(), "--poll", clilive.FastPoll},
		"peak busbw 10.97 GB/s at 4 GiB", "verdict: unknown", "EFA counters: the 4 nodes' EFA devices sent 2.28 TB and received 2.28 TB"); code != exitcode.NoVerdict {
		t.Errorf("g6e-efa: exit %d, want %d (no published figure)", code, exitcode.NoVerdict)
	}
}

// runOnceVerified runs bench run until verify lets it: kwok readies the agents' new pods in a
// moment, and verify refuses the tries before (nothing applied).
func runOnceVerified(t *testing.T, args []string) (code int, stdout, stderr string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		if code, stdout, stderr = clilive.Run(t, args...); !strings.Contains(stderr, "nothing was applied") || time.Now().After(deadline) {
			return code, stdout, stderr
		}
	}
}

// checkRunToResult runs bench run once the cluster is as planned (kwok readies new pods in a
// moment: verify may refuse the first tries) and checks its run from creation to RESULT.md, whose
// result must say each of says (written out from the launcher's log and the published figure).
func checkRunToResult(t *testing.T, c *clilive.BenchCluster, args []string, says ...string) int {
	t.Helper()
	code, progress, stderr := runOnceVerified(t, args)
	job := "mpijob/" + c.Pool.Benchmark.NCCL.Name
	pods := fmt.Sprintf("running: %d pods on", c.Pool.Benchmark.NCCL.Workers+1) // and the launcher
	for _, want := range []string{"created " + job + " in namespace default", pods, "finished: mpijob Succeeded", "deleted " + job} {
		if !strings.Contains(progress, want) {
			t.Errorf("the progress lacks %q:\n%s%s", want, progress, stderr)
		}
	}
	results := args[slices.Index(args, "--results")+1]
	runs, _ := filepath.Glob(filepath.Join(results, c.Spec.Stack, "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v\n%s%s", runs, progress, stderr)
	}
	dir := runs[0]
	logs, _ := filepath.Glob(filepath.Join(dir, benchrun.LogsDir, "*.log"))
	var launcher string
	for _, l := range logs {
		if strings.Contains(l, "launcher") {
			launcher = l
		}
	}
	if len(logs) != c.Pool.Benchmark.NCCL.Workers+1 || launcher == "" {
		t.Errorf("logs %v: want the launcher's and every worker's", logs)
	}
	md, err := os.ReadFile(filepath.Join(dir, benchrun.ResultMarkdown))
	for _, want := range append([]string{"## Doctor, on every pod's log", "finished after", "under 1 layer-3 network node",
		"`gpucluster bench report --log logs/" + filepath.Base(launcher)}, says...) {
		if err != nil || !strings.Contains(string(md), want) {
			t.Errorf("RESULT.md (%v) lacks %q:\n%s", err, want, md)
		}
	}
	t.Logf("bench run's output:\n%s\nRESULT.md:\n%s", progress, md)
	var result []map[string]any
	if raw, err := os.ReadFile(filepath.Join(dir, benchrun.ResultJSON)); err != nil || json.Unmarshal(raw, &result) != nil || len(result) == 0 {
		t.Errorf("result.json: %v %s", err, raw)
	}
	if _, err := os.Stat(filepath.Join(dir, benchrun.ResultSVG)); err != nil {
		t.Errorf("no chart: %v", err)
	}
	c.WaitGone(t)
	// bench compare reads run directories, and a stack's results for its newest run.
	if code, _, errOut := clilive.Run(t, "bench", "compare", dir, filepath.Join(results, c.Spec.Stack)); code != exitcode.OK {
		t.Errorf("bench compare on a run directory and a stack's results: exit %d\n%s", code, errOut)
	}
	return code
}

// TestBenchRunInterruptedOrOutOfTime: a g6e-efa run whose job waits in the queue (no GPU node
// yet, run with --ignore-verify) is interrupted as Ctrl-C does, and another runs out of
// --timeout: each deletes the MPIJob it created, leaves nothing of it in the cluster, writes
// RESULT.md saying so, and exits 1.
func TestBenchRunInterruptedOrOutOfTime(t *testing.T) {
	c := clilive.StartBenchCluster(t, "g6e-efa", false, "")
	results := t.TempDir()
	args := []string{"bench", "run", "--stack", "g6e-efa", "--kubeconfig", c.Kubeconfig, "--results", results, "--ignore-verify", "--poll", clilive.FastPoll}

	if code, out, errOut := clilive.RunInterruptedOn(t, "queued:", args...); code != exitcode.Fail || !strings.Contains(out, "interrupted: deleting mpijob/gpu-nccl-allreduce") {
		t.Errorf("interrupted: exit %d\n%s%s", code, out, errOut)
	}
	c.WaitGone(t)

	// Each run's directory is named by its start; each process starts its clock at GPUCLUSTER_AT.
	t.Setenv("GPUCLUSTER_AT", clilive.TestDay.Add(time.Minute).Format(time.RFC3339))
	if code, out, errOut := clilive.Run(t, append(args, "--timeout", "3s")...); code != exitcode.Fail || !strings.Contains(out, "timed out after 3s") {
		t.Errorf("out of time: exit %d\n%s%s", code, out, errOut)
	}
	c.WaitGone(t)
	runs, _ := filepath.Glob(filepath.Join(results, "g6e-efa", "*", benchrun.ResultMarkdown))
	if len(runs) != 2 {
		t.Fatalf("RESULT.md files %v", runs)
	}
	for _, r := range runs {
		md, _ := os.ReadFile(r)
		if !strings.Contains(string(md), "did not finish") || !strings.Contains(string(md), "verify error(s)") {
			t.Errorf("%s:\n%s", r, md)
		}
	}
}

// TestBenchRunTrain runs `bench run --job train` on g6e-efa with a training command: Kueue admits
// the TrainJob, the real Trainer and JobSet make its pods, kwok runs them on the pool's nodes and
// completes them; rank 0's log (a training log of our own, kwok serving it with its own
// timestamps, as kubectl logs --timestamps returns them) is the result, judged by bench report as
// a training run.
func TestBenchRunTrain(t *testing.T) {
	data, err := os.ReadFile(clilive.Repo("stacks", "Pulumi.g6e-efa.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "Pulumi.g6e-train.yaml")
	stack := strings.Replace(string(data), "    enabled: true\n", "    enabled: true\n    trainingCommand: [train.py, --epochs, \"1\"]\n", 1)
	if err := os.WriteFile(file, []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(program.EnvStackFile, file)
	// The recorded log's own timestamps become the container runtime's.
	var cri strings.Builder
	for _, line := range strings.Split(strings.TrimSuffix(clilive.Fixture(t, "train-g6e-efa-kubectl.txt"), "\n"), "\n") {
		at, rest, _ := strings.Cut(line, " ")
		fmt.Fprintf(&cri, "%s stdout F %s\n", at, rest)
	}
	c := clilive.StartBenchClusterFrom(t, file, true, map[string]string{topology.TrainerContainer: cri.String()})
	train := c.Pool.Benchmark.Train
	if train == nil || !train.EFACounters {
		t.Fatalf("the stack has no training job recording EFA counters: %s", stack)
	}
	// Each node's training pod logs its own node's EFA readings, right before torchrun and
	// right after it (as its wrapper prints them): only reading every pod's log finds them all.
	_, nodes := topology.PlannedNodes(c.Pool)
	for i := range nodes {
		node := fmt.Sprintf("%s-%d", c.Pool.Name, i)
		reading := func(at, phase string, tx uint64) string {
			return at + " stdout F " + topology.EFACounterLine(phase, node, "rdmap0s26", map[string]uint64{topology.EFATxBytes: tx, topology.EFARxBytes: tx}) + "\n"
		}
		log := reading("2026-03-04T09:12:02.100000000Z", topology.EFAPhaseBefore, 7_000_000) + cri.String() +
			reading("2026-03-04T09:53:10.200000000Z", topology.EFAPhaseAfter, 7_000_000+3_180_000_000_000)
		stop, err := c.S.ServeLogOnNode(benchjobs.Namespace, benchjobs.LabelJobSetName, train.Name, node, topology.TrainerContainer, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	results := t.TempDir()
	args := []string{"bench", "run", "--stack", "g6e-train", "--job", "train", "--kubeconfig", c.Kubeconfig, "--results", results, "--poll", clilive.FastPoll}
	code, progress, stderr := runOnceVerified(t, args)
	for _, want := range []string{"created trainjob/", "running: ", "finished: trainjob Complete", "deleted trainjob/"} {
		if !strings.Contains(progress, want) {
			t.Errorf("the progress lacks %q:\n%s%s", want, progress, stderr)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(results, "g6e-train", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v\n%s%s", runs, progress, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(runs[0], benchrun.ResultMarkdown))
	logs, _ := filepath.Glob(filepath.Join(runs[0], benchrun.LogsDir, "*.log"))
	// RESULT.md names the log it reported on: rank 0's, the pod of index 0 of the JobSet's job.
	_, named, _ := strings.Cut(string(md), "--log "+benchrun.LogsDir+"/")
	named, _, _ = strings.Cut(named, " ")
	rank0 := filepath.Join(runs[0], benchrun.LogsDir, named)
	if len(logs) != c.Pool.Benchmark.Train.NumNodes || !slices.Contains(logs, rank0) || !strings.Contains(named, "-node-0-0-") {
		t.Fatalf("logs %v: want one per node, rank 0's the result\n%s", logs, md)
	}
	// A training run that finished passes (exit 0); its wall clock is the log's own, from its first
	// line (09:12:03.414) to its last (09:53:09.814): 41 min 6 s, the readings around torchrun
	// left out. Every node's device carried its share, read from every pod's log.
	for _, want := range []string{"wall clock 41m6s (2466 s)", "verdict: pass", "the run finished", "--efa-counters " + benchrun.LogsDir,
		fmt.Sprintf("the %d nodes' EFA devices sent %s", nodes, efareading.BytesText(uint64(nodes)*3_180_000_000_000))} {
		if !strings.Contains(string(md), want) {
			t.Errorf("RESULT.md lacks %q:\n%s", want, md)
		}
	}
	if code != exitcode.OK {
		t.Errorf("bench run exits %d, want %d", code, exitcode.OK)
	}
	// The real Trainer applied gpucluster's runtime patch: the pods mount the exchange directory
	// where they ask the node's reader.
	pods, _ := os.ReadFile(filepath.Join(runs[0], benchrun.PodsFile))
	if !strings.Contains(string(pods), `"path": "`+topology.EFACountersDir+`"`) || !strings.Contains(string(pods), `"mountPath": "`+topology.EFACountersDir+`"`) {
		t.Errorf("the training pods do not mount %s:\n%s", topology.EFACountersDir, pods)
	}
	t.Logf("bench run's output:\n%s\nRESULT.md:\n%s", progress, md)
	c.WaitGoneKinds(t, map[string]any{"apiVersion": topology.TrainerAPIVersion, "kind": "TrainJob"}, map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"})
}

// TestBenchRunFailedJob: an MPIJob whose launcher fails (kwok ends its every try with exit code
// 1: the launcher Job's backoffLimit of 2 spent, the MPI operator marks the MPIJob Failed) is a
// finished run, seen as soon as it fails, not waited on to the timeout; bench run exits 1 even
// though the launcher's log (p5's fixture) holds a table that passes, and RESULT.md says Failed.
func TestBenchRunFailedJob(t *testing.T) {
	opts := kubeapi.MPIJobKwokOptions
	opts.JobPodsFail = true
	c := clilive.StartBenchClusterWith(t, clilive.Repo("stacks", "Pulumi.p5-efa.yaml"), true,
		map[string]string{"launcher": kubeapi.CRILogLines(clilive.Fixture(t, "mpijob-p5-eks-excerpt.txt"), time.Now())}, opts)
	results := t.TempDir()
	// Three minutes: the job fails in about one; a run that missed the failure would time out.
	code, progress, stderr := runOnceVerified(t, []string{"bench", "run", "--stack", "p5-efa", "--kubeconfig", c.Kubeconfig, "--results", results, "--timeout", "3m", "--poll", clilive.FastPoll})
	if code != exitcode.Fail || !strings.Contains(progress, "finished: mpijob Failed") || strings.Contains(progress, "timed out") ||
		!strings.Contains(stderr, "the job finished: Failed") {
		t.Errorf("a failed MPIJob: exit %d\n%s%s", code, progress, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(results, "p5-efa", "*", benchrun.ResultMarkdown))
	if len(runs) != 1 {
		t.Fatalf("RESULT.md files %v", runs)
	}
	if md, _ := os.ReadFile(runs[0]); !strings.Contains(string(md), "job `mpijob/gpu-nccl-allreduce`: Failed") || !strings.Contains(string(md), ", finished after") {
		t.Errorf("RESULT.md:\n%s", md)
	}
	c.WaitGone(t)
}
