package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/deviceplugin"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/benchrun"
	"github.com/gpucluster/gpucluster/internal/efareading"
	"github.com/gpucluster/gpucluster/internal/verify"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// benchCluster is a cluster as `pulumi up` leaves it for bench run, in the harness: the real
// kube-apiserver, kube-scheduler, Job controller and garbage collector, the real Kueue with the
// stack's queues, and the real MPI operator (run with the admin's token here: the Roles it gets
// are proven in infra/program); kwok plays the kubelet of every node, system and GPU, so pods
// run, finish (a Job's pods) and serve logs. The GPU nodes are the pool's planned nodes as they
// register once their health gate passed, each with the agents' pods the stack's DaemonSets
// would put there (a stand-in for the DaemonSet controller); the logs are files of our own.
type benchCluster struct {
	s          *kubeapi.Server
	kubeconfig string
	spec       topology.StackSpec
	pool       topology.PoolSpec
}

func startBenchCluster(t *testing.T, stack string, withNodes bool, launcherLog string) *benchCluster {
	return startBenchClusterFrom(t, "../../stacks/Pulumi."+stack+".yaml", withNodes, map[string]string{"launcher": kubeapi.CRILogLines(launcherLog, time.Now())})
}

// startBenchClusterFrom starts the cluster for a stack file, kwok serving each named container's
// log (CRI format) in the jobs' namespace; a stack with a training command gets the Trainer and
// JobSet, their runtimes and the training pods' account.
func startBenchClusterFrom(t *testing.T, file string, withNodes bool, logs map[string]string) *benchCluster {
	return startBenchClusterWith(t, file, withNodes, logs, kubeapi.MPIJobKwokOptions)
}

// startBenchClusterWith is startBenchClusterFrom with kwok's lifecycle of the jobs' pods.
func startBenchClusterWith(t *testing.T, file string, withNodes bool, logs map[string]string, kwokOptions kubeapi.KwokOptions) *benchCluster {
	t.Helper()
	s := kubeapi.StartForTest(t)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	kwok := func() error { return s.StartKwokWith(kwokOptions) }
	for _, start := range []func() error{s.StartScheduler, s.StartJobController, s.StartGarbageCollector, kwok} {
		must(start())
	}
	stopKueue, err := s.StartKueueWith(map[string]any{"resources": kueue.Resources()})
	must(err)
	t.Cleanup(stopKueue)
	ns := benchjobs.Namespace
	// The namespaces' default accounts, which the harness has no controller to make.
	for _, n := range []string{ns, "kube-system"} {
		must(s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": n}}))
	}
	stopMPI, err := s.StartMPIOperator(ns, ns, s.Token())
	must(err)
	t.Cleanup(stopMPI)
	spec, err := topology.LoadStack(file, now())
	must(err)
	if len(spec.Benchmarks.TrainingCommand) > 0 {
		for _, start := range []func() (func(), error){s.StartJobSet, s.StartTrainer} {
			stop, err := start()
			must(err)
			t.Cleanup(stop)
		}
		must(s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": topology.TrainingServiceAccount, "namespace": ns},
			"automountServiceAccountToken": false}))
		for _, rt := range trainer.Runtimes(spec.Pools, spec.Labels()) {
			must(s.Create(map[string]any{"apiVersion": topology.TrainerAPIVersion, "kind": "ClusterTrainingRuntime",
				"metadata": map[string]any{"name": rt.Name, "labels": rt.Labels}, "spec": rt.Spec}))
		}
	}
	for _, obj := range kueue.Objects(spec.Pools, spec.Labels()) {
		if obj["kind"] == "LocalQueue" {
			obj["metadata"].(map[string]any)["namespace"] = ns
		}
		must(s.Create(obj))
	}
	// Each container's log: the launcher's (or rank 0's) is the run's output, the workers' sshd's.
	logs = maps.Clone(logs)
	logs["worker"] = kubeapi.CRILogLines(kubeapi.MPIWorkerLog, time.Now())
	must(s.ServeLogs("bench", ns, logs))
	c := &benchCluster{s: s, spec: spec, pool: spec.Pools[0]}
	c.kubeconfig, err = s.AdminKubeconfig()
	must(err)
	for i := range spec.Cluster.SystemNodes.Count {
		must(s.CreateKwokNode(kubeapi.KwokNode(fmt.Sprintf("system-%d", i), map[string]string{topology.LabelPool: topology.SystemPool}, nil, kubeapi.SystemNodeAllocatable)))
	}
	if withNodes {
		c.gpuNodes(t, "")
	}
	return c
}

// gpuNodes registers the pool's planned nodes, with every agent's pod but the one named.
func (c *benchCluster) gpuNodes(t *testing.T, without string) {
	_, n := topology.PlannedNodes(c.pool)
	for i := range n {
		c.gpuNode(t, fmt.Sprintf("%s-%d", c.pool.Name, i), without)
	}
}

// gpuNode registers one node of the pool as it joins once its health gate passed, with every
// agent's pod but the one named.
func (c *benchCluster) gpuNode(t *testing.T, name, without string) {
	p := c.pool
	labels := map[string]string{topology.LabelInstanceType: p.Instance.Name, topology.LabelZone: p.AvailabilityZones[0]}
	for k, v := range p.Labels {
		labels[k] = v
	}
	for l := 1; l <= p.Instance.NetworkNodeLayers; l++ {
		labels[fmt.Sprintf("%s%d", topology.LabelNetworkNodeLayerPrefix, l)] = fmt.Sprintf("nn-%d", l)
	}
	var taints []map[string]any
	for _, tn := range p.Taints {
		taints = append(taints, map[string]any{"key": tn.Key, "value": tn.Value, "effect": tn.Effect})
	}
	if err := c.s.CreateKwokNode(kubeapi.KwokNode(name, labels, taints, topology.NodeAllocatable(p))); err != nil {
		t.Fatal(err)
	}
	for _, agent := range verify.PoolAgents(p) {
		if agent == without {
			continue
		}
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": agent + "-" + name, "namespace": "kube-system", "labels": map[string]any{"app.kubernetes.io/name": agent}},
			"spec": map[string]any{"nodeName": name, "tolerations": []any{map[string]any{"operator": "Exists"}},
				"containers": []any{map[string]any{"name": "agent", "image": agent}}}}
		if err := c.s.Create(pod); err != nil {
			t.Fatal(err)
		}
	}
}

// left is what of the job is still in the cluster: the job, its pods, Kueue's Workload, and
// any more kinds named.
func (c *benchCluster) left(t *testing.T, more ...map[string]any) string {
	names, err := c.s.Names(benchjobs.Namespace, append(slices.Clone(benchjobs.MPIJobObjects), more...)...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}

// waitGone waits until nothing of the job is left (the garbage collector deletes its pods).
func (c *benchCluster) waitGone(t *testing.T) { c.waitGoneKinds(t) }

func (c *benchCluster) waitGoneKinds(t *testing.T, more ...map[string]any) {
	deadline := time.Now().Add(time.Minute)
	for left := c.left(t, more...); left != ""; left = c.left(t, more...) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after bench run, still in the cluster: %s", left)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fixture is a recorded log of internal/bench/testdata without its provenance line.
func fixture(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("../../internal/bench/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	return rest
}

// g6eLauncherLog is the g6e-efa launcher's log of our own, without its provenance line.
func g6eLauncherLog(t *testing.T) string {
	b, err := os.ReadFile("testdata/benchrun/g6e-efa-launcher.log")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	return rest
}

func fastPolls(t *testing.T) {
	old := pollInterval
	pollInterval = 500 * time.Millisecond
	t.Cleanup(func() { pollInterval = old })
}

// TestBenchRunOnP5 runs `gpucluster bench run --stack p5-efa` against the harness: refused
// while a node lacks its EFA device plugin (nothing applied), then, with the cluster as planned,
// from the MPIJob's creation to RESULT.md: Kueue admits it, the MPI operator makes the workers on
// the pool's nodes and the launcher on a system node, kwok runs and finishes it; every pod's log
// is in the run's directory, bench report's verdict, doctor's reading and the chart beside them,
// and nothing of the job is left in the cluster.
func TestBenchRunOnP5(t *testing.T) {
	fastPolls(t)
	c := startBenchCluster(t, "p5-efa", true, fixture(t, "mpijob-p5-eks-excerpt.txt"))
	// One node's EFA device plugin gone (the commonest fault): one error is enough to refuse.
	efaPod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": deviceplugin.EFAName + "-gpu-1", "namespace": "kube-system"}}
	if err := c.s.Delete(efaPod); err != nil {
		t.Fatal(err)
	}
	results := t.TempDir()
	args := []string{"bench", "run", "--stack", "p5-efa", "--kubeconfig", c.kubeconfig, "--results", results}
	var out, errOut strings.Builder
	if code := run(args, &out, &errOut); code != exitFail || !strings.Contains(errOut.String(), "verify finds 1 error(s) on pool gpu") ||
		!strings.Contains(errOut.String(), "nothing was applied") || !strings.Contains(errOut.String(), "agent-missing") {
		t.Fatalf("with one node's EFA device plugin missing: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	if left := c.left(t); left != "" {
		t.Fatalf("a refused run applied %s", left)
	}
	// The missing pod, as the DaemonSet controller would make it again.
	if err := c.s.Create(map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": deviceplugin.EFAName + "-gpu-1-new", "namespace": "kube-system", "labels": map[string]any{"app.kubernetes.io/name": deviceplugin.EFAName}},
		"spec":     map[string]any{"nodeName": "gpu-1", "tolerations": []any{map[string]any{"operator": "Exists"}}, "containers": []any{map[string]any{"name": "agent", "image": "efa"}}}}); err != nil {
		t.Fatal(err)
	}
	// The fixture's 2 GiB row: 448.22 GB/s out of place, 102% of AWS's published 437.79 GB/s.
	if code := checkRunToResult(t, c, args, "verdict: pass", "busbw 448.22 GB/s at 2 GiB is 102% of the published 437.79 GB/s"); code != exitOK {
		t.Errorf("p5-efa: exit %d, want %d (its verdict passes)", code, exitOK)
	}
}

// TestBenchRunOnG6e: the same on g6e-efa, from creation to RESULT.md; no figure is published
// for it, so the verdict is unknown and bench run exits 3, as bench report does.
func TestBenchRunOnG6e(t *testing.T) {
	fastPolls(t)
	c := startBenchCluster(t, "g6e-efa", true, g6eLauncherLog(t))
	// The log's best row: 10.97 GB/s at 4 GiB; its launcher's EFA readings: each node's device
	// sent about 571 GB during the run.
	if code := checkRunToResult(t, c, []string{"bench", "run", "--stack", "g6e-efa", "--kubeconfig", c.kubeconfig, "--results", t.TempDir()},
		"peak busbw 10.97 GB/s at 4 GiB", "verdict: unknown", "EFA counters: the 4 nodes' EFA devices sent 2.28 TB and received 2.28 TB"); code != exitNoVerdict {
		t.Errorf("g6e-efa: exit %d, want %d (no published figure)", code, exitNoVerdict)
	}
}

// runOnceVerified runs bench run until verify lets it: kwok readies the agents' new pods in a
// moment, and verify refuses the tries before (nothing applied).
func runOnceVerified(args []string) (code int, stdout, stderr string) {
	var out, errOut strings.Builder
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
		out.Reset()
		errOut.Reset()
		if code = run(args, &out, &errOut); !strings.Contains(errOut.String(), "nothing was applied") || time.Now().After(deadline) {
			return code, out.String(), errOut.String()
		}
	}
}

// checkRunToResult runs bench run once the cluster is as planned (kwok readies new pods in a
// moment: verify may refuse the first tries) and checks its run from creation to RESULT.md, whose
// result must say each of says (written out from the launcher's log and the published figure).
func checkRunToResult(t *testing.T, c *benchCluster, args []string, says ...string) int {
	t.Helper()
	code, progress, stderr := runOnceVerified(args)
	job := "mpijob/" + c.pool.Benchmark.NCCL.Name
	pods := fmt.Sprintf("running: %d pods on", c.pool.Benchmark.NCCL.Workers+1) // and the launcher
	for _, want := range []string{"created " + job + " in namespace default", pods, "finished: mpijob Succeeded", "deleted " + job} {
		if !strings.Contains(progress, want) {
			t.Errorf("the progress lacks %q:\n%s%s", want, progress, stderr)
		}
	}
	results := args[slices.Index(args, "--results")+1]
	runs, _ := filepath.Glob(filepath.Join(results, c.spec.Stack, "*"))
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
	if len(logs) != c.pool.Benchmark.NCCL.Workers+1 || launcher == "" {
		t.Errorf("logs %v: want the launcher's and every worker's", logs)
	}
	md, err := os.ReadFile(filepath.Join(dir, resultMarkdown))
	for _, want := range append([]string{"## Doctor, on every pod's log", "finished after", "under 1 layer-3 network node",
		"`gpucluster bench report --log logs/" + filepath.Base(launcher)}, says...) {
		if err != nil || !strings.Contains(string(md), want) {
			t.Errorf("RESULT.md (%v) lacks %q:\n%s", err, want, md)
		}
	}
	t.Logf("bench run's output:\n%s\nRESULT.md:\n%s", progress, md)
	var result []map[string]any
	if raw, err := os.ReadFile(filepath.Join(dir, resultJSON)); err != nil || json.Unmarshal(raw, &result) != nil || len(result) == 0 {
		t.Errorf("result.json: %v %s", err, raw)
	}
	if _, err := os.Stat(filepath.Join(dir, resultSVG)); err != nil {
		t.Errorf("no chart: %v", err)
	}
	c.waitGone(t)
	// bench compare reads run directories, and a stack's results for its newest run.
	var out, errOut strings.Builder
	if code := run([]string{"bench", "compare", dir, filepath.Join(results, c.spec.Stack)}, &out, &errOut); code != exitOK {
		t.Errorf("bench compare on a run directory and a stack's results: exit %d\n%s", code, errOut.String())
	}
	return code
}

// signalOn is an io.Writer that cancels once what is written contains a word.
type signalOn struct {
	mu     sync.Mutex
	b      strings.Builder
	word   string
	cancel context.CancelFunc
}

func (w *signalOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if strings.Contains(w.b.String(), w.word) {
		w.cancel()
	}
	return len(p), nil
}

// interruptOn has the command's run context cancelled, as Ctrl-C does, once its output holds
// word; the returned writer is that output, and restore puts the usual run context back (the
// test's end does too).
func interruptOn(t *testing.T, word string) (w *signalOn, restore func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	old := runContext
	runContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	restore = func() { runContext = old }
	t.Cleanup(restore)
	return &signalOn{word: word, cancel: cancel}, restore
}

// TestBenchRunInterruptedOrOutOfTime: a g6e-efa run whose job waits in the queue (no GPU node
// yet, run with --ignore-verify) is interrupted as Ctrl-C does, and another runs out of
// --timeout: each deletes the MPIJob it created, leaves nothing of it in the cluster, writes
// RESULT.md saying so, and exits 1.
func TestBenchRunInterruptedOrOutOfTime(t *testing.T) {
	fastPolls(t)
	c := startBenchCluster(t, "g6e-efa", false, "")
	results := t.TempDir()
	args := []string{"bench", "run", "--stack", "g6e-efa", "--kubeconfig", c.kubeconfig, "--results", results, "--ignore-verify"}

	w, restore := interruptOn(t, "queued:")
	var errOut strings.Builder
	if code := run(args, w, &errOut); code != exitFail || !strings.Contains(w.b.String(), "interrupted: deleting mpijob/gpu-nccl-allreduce") {
		t.Errorf("interrupted: exit %d\n%s%s", code, w.b.String(), errOut.String())
	}
	c.waitGone(t)

	restore()
	time.Sleep(time.Second) // a new second: a new run directory
	var out strings.Builder
	errOut.Reset()
	if code := run(append(args, "--timeout", "3s"), &out, &errOut); code != exitFail || !strings.Contains(out.String(), "timed out after 3s") {
		t.Errorf("out of time: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	c.waitGone(t)
	runs, _ := filepath.Glob(filepath.Join(results, "g6e-efa", "*", resultMarkdown))
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
	fastPolls(t)
	data, err := os.ReadFile("../../stacks/Pulumi.g6e-efa.yaml")
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
	for _, line := range strings.Split(strings.TrimSuffix(fixture(t, "train-g6e-efa-kubectl.txt"), "\n"), "\n") {
		at, rest, _ := strings.Cut(line, " ")
		fmt.Fprintf(&cri, "%s stdout F %s\n", at, rest)
	}
	c := startBenchClusterFrom(t, file, true, map[string]string{topology.TrainerContainer: cri.String()})
	train := c.pool.Benchmark.Train
	if train == nil || !train.EFACounters {
		t.Fatalf("the stack has no training job recording EFA counters: %s", stack)
	}
	// Each node's training pod logs its own node's EFA readings, right before torchrun and
	// right after it (as its wrapper prints them): only reading every pod's log finds them all.
	_, nodes := topology.PlannedNodes(c.pool)
	for i := range nodes {
		node := fmt.Sprintf("%s-%d", c.pool.Name, i)
		reading := func(at, phase string, tx uint64) string {
			return at + " stdout F " + topology.EFACounterLine(phase, node, "rdmap0s26", map[string]uint64{topology.EFATxBytes: tx, topology.EFARxBytes: tx}) + "\n"
		}
		log := reading("2026-03-04T09:12:02.100000000Z", topology.EFAPhaseBefore, 7_000_000) + cri.String() +
			reading("2026-03-04T09:53:10.200000000Z", topology.EFAPhaseAfter, 7_000_000+3_180_000_000_000)
		stop, err := c.s.ServeLogOnNode(benchjobs.Namespace, benchjobs.LabelJobSetName, train.Name, node, topology.TrainerContainer, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	results := t.TempDir()
	args := []string{"bench", "run", "--stack", "g6e-train", "--job", "train", "--kubeconfig", c.kubeconfig, "--results", results}
	code, progress, stderr := runOnceVerified(args)
	for _, want := range []string{"created trainjob/", "running: ", "finished: trainjob Complete", "deleted trainjob/"} {
		if !strings.Contains(progress, want) {
			t.Errorf("the progress lacks %q:\n%s%s", want, progress, stderr)
		}
	}
	runs, _ := filepath.Glob(filepath.Join(results, "g6e-train", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories %v\n%s%s", runs, progress, stderr)
	}
	md, _ := os.ReadFile(filepath.Join(runs[0], resultMarkdown))
	logs, _ := filepath.Glob(filepath.Join(runs[0], benchrun.LogsDir, "*.log"))
	// RESULT.md names the log it reported on: rank 0's, the pod of index 0 of the JobSet's job.
	_, named, _ := strings.Cut(string(md), "--log "+benchrun.LogsDir+"/")
	named, _, _ = strings.Cut(named, " ")
	rank0 := filepath.Join(runs[0], benchrun.LogsDir, named)
	if len(logs) != c.pool.Benchmark.Train.NumNodes || !slices.Contains(logs, rank0) || !strings.Contains(named, "-node-0-0-") {
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
	if code != exitOK {
		t.Errorf("bench run exits %d, want %d", code, exitOK)
	}
	// The real Trainer applied gpucluster's runtime patch: the pods mount the exchange directory
	// where they ask the node's reader.
	pods, _ := os.ReadFile(filepath.Join(runs[0], benchrun.PodsFile))
	if !strings.Contains(string(pods), `"path": "`+topology.EFACountersDir+`"`) || !strings.Contains(string(pods), `"mountPath": "`+topology.EFACountersDir+`"`) {
		t.Errorf("the training pods do not mount %s:\n%s", topology.EFACountersDir, pods)
	}
	t.Logf("bench run's output:\n%s\nRESULT.md:\n%s", progress, md)
	c.waitGoneKinds(t, map[string]any{"apiVersion": topology.TrainerAPIVersion, "kind": "TrainJob"}, map[string]any{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"})
}

// TestBenchRunFailedJob: an MPIJob whose launcher fails (kwok ends its every try with exit code
// 1: the launcher Job's backoffLimit of 2 spent, the MPI operator marks the MPIJob Failed) is a
// finished run, seen as soon as it fails, not waited on to the timeout; bench run exits 1 even
// though the launcher's log (p5's fixture) holds a table that passes, and RESULT.md says Failed.
func TestBenchRunFailedJob(t *testing.T) {
	fastPolls(t)
	opts := kubeapi.MPIJobKwokOptions
	opts.JobPodsFail = true
	c := startBenchClusterWith(t, "../../stacks/Pulumi.p5-efa.yaml", true,
		map[string]string{"launcher": kubeapi.CRILogLines(fixture(t, "mpijob-p5-eks-excerpt.txt"), time.Now())}, opts)
	results := t.TempDir()
	// Three minutes: the job fails in about one; a run that missed the failure would time out.
	code, progress, stderr := runOnceVerified([]string{"bench", "run", "--stack", "p5-efa", "--kubeconfig", c.kubeconfig, "--results", results, "--timeout", "3m"})
	if code != exitFail || !strings.Contains(progress, "finished: mpijob Failed") || strings.Contains(progress, "timed out") ||
		!strings.Contains(stderr, "the job finished: Failed") {
		t.Errorf("a failed MPIJob: exit %d\n%s%s", code, progress, stderr)
	}
	runs, _ := filepath.Glob(filepath.Join(results, "p5-efa", "*", resultMarkdown))
	if len(runs) != 1 {
		t.Fatalf("RESULT.md files %v", runs)
	}
	if md, _ := os.ReadFile(runs[0]); !strings.Contains(string(md), "job `mpijob/gpu-nccl-allreduce`: Failed") || !strings.Contains(string(md), ", finished after") {
		t.Errorf("RESULT.md:\n%s", md)
	}
	c.waitGone(t)
}
