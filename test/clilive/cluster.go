package clilive

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/internal/verify"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// BenchCluster is a cluster as `pulumi up` leaves it for bench run, in the harness: the real
// kube-apiserver, kube-scheduler, Job controller and garbage collector, the real Kueue with the
// stack's queues, and the real MPI operator (run with the admin's token here: the Roles it gets
// are proven in infra/program); kwok plays the kubelet of every node, system and GPU, so pods
// run, finish (a Job's pods) and serve logs. The GPU nodes are the pool's planned nodes as they
// register once their health gate passed, each with the agents' pods the stack's DaemonSets
// would put there (a stand-in for the DaemonSet controller); the logs are files of our own.
type BenchCluster struct {
	S          *kubeapi.Server
	Kubeconfig string
	Spec       topology.StackSpec
	Pool       topology.PoolSpec
}

// StartBenchCluster starts the cluster for stacks/Pulumi.<stack>.yaml, kwok serving launcherLog
// as the launcher's log.
func StartBenchCluster(t *testing.T, stack string, withNodes bool, launcherLog string) *BenchCluster {
	return StartBenchClusterFrom(t, Repo("stacks", "Pulumi."+stack+".yaml"), withNodes, map[string]string{"launcher": kubeapi.CRILogLines(launcherLog, time.Now())})
}

// StartBenchClusterFrom starts the cluster for a stack file, kwok serving each named container's
// log (CRI format) in the jobs' namespace; a stack with a training command gets the Trainer and
// JobSet, their runtimes and the training pods' account.
func StartBenchClusterFrom(t *testing.T, file string, withNodes bool, logs map[string]string) *BenchCluster {
	return StartBenchClusterWith(t, file, withNodes, logs, kubeapi.MPIJobKwokOptions)
}

// StartBenchClusterWith is StartBenchClusterFrom with kwok's lifecycle of the jobs' pods.
func StartBenchClusterWith(t *testing.T, file string, withNodes bool, logs map[string]string, kwokOptions kubeapi.KwokOptions) *BenchCluster {
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
	spec, err := topology.LoadStack(file, TestDay)
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
	c := &BenchCluster{S: s, Spec: spec, Pool: spec.Pools[0]}
	c.Kubeconfig, err = s.AdminKubeconfig()
	must(err)
	for i := range spec.Cluster.SystemNodes.Count {
		must(s.CreateKwokNode(kubeapi.KwokNode(fmt.Sprintf("system-%d", i), map[string]string{topology.LabelPool: topology.SystemPool}, nil, kubeapi.SystemNodeAllocatable)))
	}
	if withNodes {
		c.GPUNodes(t, "")
	}
	return c
}

// GPUNodes registers the pool's planned nodes, with every agent's pod but the one named.
func (c *BenchCluster) GPUNodes(t *testing.T, without string) {
	_, n := topology.PlannedNodes(c.Pool)
	for i := range n {
		c.GPUNode(t, fmt.Sprintf("%s-%d", c.Pool.Name, i), without)
	}
}

// GPUNode registers one node of the pool as it joins once its health gate passed, with every
// agent's pod but the one named.
func (c *BenchCluster) GPUNode(t *testing.T, name, without string) {
	p := c.Pool
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
	if err := c.S.CreateKwokNode(kubeapi.KwokNode(name, labels, taints, topology.NodeAllocatable(p))); err != nil {
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
		if err := c.S.Create(pod); err != nil {
			t.Fatal(err)
		}
	}
}

// Left is what of the job is still in the cluster: the job, its pods, Kueue's Workload, and
// any more kinds named.
func (c *BenchCluster) Left(t *testing.T, more ...map[string]any) string {
	names, err := c.S.Names(benchjobs.Namespace, append(slices.Clone(benchjobs.MPIJobObjects), more...)...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}

// WaitGone waits until nothing of the job is left (the garbage collector deletes its pods).
func (c *BenchCluster) WaitGone(t *testing.T) { c.WaitGoneKinds(t) }

// WaitGoneKinds is WaitGone, waiting for more kinds too.
func (c *BenchCluster) WaitGoneKinds(t *testing.T, more ...map[string]any) {
	deadline := time.Now().Add(time.Minute)
	for left := c.Left(t, more...); left != ""; left = c.Left(t, more...) {
		if time.Now().After(deadline) {
			t.Fatalf("a minute after bench run, still in the cluster: %s", left)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Fixture is a recorded log of internal/bench/testdata without its provenance line.
func Fixture(t *testing.T, name string) string {
	return withoutProvenance(t, Repo("internal", "bench", "testdata", name))
}

// G6eLauncherLog is the g6e-efa launcher's log of our own, without its provenance line.
func G6eLauncherLog(t *testing.T) string {
	return withoutProvenance(t, Repo("cmd", "gpucluster", "testdata", "benchrun", "g6e-efa-launcher.log"))
}

// HealthFixture is a log of internal/health/testdata without its provenance line.
func HealthFixture(t *testing.T, name string) string {
	return withoutProvenance(t, Repo("internal", "health", "testdata", name))
}

// withoutProvenance is a fixture file without its first line, which says where its shape comes
// from.
func withoutProvenance(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	return rest
}

// StartHealthCluster is the p5-efa cluster of bench run's tests with four GPU nodes: kwok runs
// the health jobs' pods and serves their logs (every node's diagnostics and all-reduce pass, the
// pair's launcher runs over EFA), and gpu-3 runs a training pod that holds its GPUs.
func StartHealthCluster(t *testing.T) *BenchCluster {
	t.Helper()
	logs := map[string]string{
		benchjobs.DiagContainer:      kubeapi.CRILogLines(HealthFixture(t, "dcgm-pass-p5.log"), time.Now()),
		benchjobs.AllReduceContainer: kubeapi.CRILogLines(HealthFixture(t, "node-allreduce-p5.log"), time.Now()),
		"launcher":                   kubeapi.CRILogLines(Fixture(t, "efa-p5-2node.txt"), time.Now()),
	}
	c := StartBenchClusterWith(t, Repo("stacks", "Pulumi.p5-efa.yaml"), false, logs, kubeapi.MPIJobKwokOptions)
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"} {
		c.GPUNode(t, n, "")
	}
	busy := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "busy-train", "namespace": benchjobs.Namespace},
		"spec": map[string]any{"nodeName": "gpu-3", "tolerations": []any{map[string]any{"operator": "Exists"}},
			"containers": []any{map[string]any{"name": "train", "image": "train", "resources": map[string]any{"limits": map[string]any{topology.ResourceGPU: "8"}}}}}}
	if err := c.S.Create(busy); err != nil {
		t.Fatal(err)
	}
	return c
}

// Node is a node's labels, annotations and taints.
func (c *BenchCluster) Node(t *testing.T, name string) (labels, annotations map[string]any, taints []any) {
	t.Helper()
	n, err := c.S.Get(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}})
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

// HasHealthTaint says whether taints hold the health gate's.
func HasHealthTaint(taints []any) bool {
	return slices.ContainsFunc(taints, func(x any) bool {
		m, _ := x.(map[string]any)
		return m["key"] == topology.HealthTaint.Key && m["value"] == topology.HealthTaint.Value
	})
}

// HealthLeft is what of a health run is still in the jobs' namespace.
func (c *BenchCluster) HealthLeft(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var left []string
		for _, kind := range benchjobs.MPIJobObjects {
			objs, err := c.S.List(map[string]any{"apiVersion": kind["apiVersion"], "kind": kind["kind"], "metadata": map[string]any{"namespace": benchjobs.Namespace}})
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
