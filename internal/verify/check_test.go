package verify

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// loadStack derives a stack of stacks/.
func loadStack(t *testing.T, name string) topology.StackSpec {
	t.Helper()
	spec, err := topology.LoadStack(filepath.Join("..", "..", "stacks", "Pulumi."+name+".yaml"), testDay)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// builtToSpec is a cluster as the spec plans it, written from the spec's own fields: each pool's
// planned nodes (a Karpenter pool at its limit) with their labels, taints (startup taints
// lifted), zone, type and allocatable, each node agent's pod Ready on each, every controller
// object Ready or Active. The faults below each change one thing of it.
func builtToSpec(spec topology.StackSpec) *Cluster {
	c := &Cluster{Objects: map[string][]Object{}}
	ready := []Condition{{Type: "Ready", Status: "True"}}
	for _, p := range spec.Pools {
		_, n := topology.PlannedNodes(p)
		for i := range n {
			var node Node
			node.Metadata.Name = fmt.Sprintf("%s-%d", p.Name, i)
			node.Metadata.Labels = map[string]string{topology.LabelInstanceType: p.Instance.Name, topology.LabelHostname: node.Metadata.Name}
			if len(p.AvailabilityZones) > 0 {
				node.Metadata.Labels[topology.LabelZone] = p.AvailabilityZones[i%len(p.AvailabilityZones)]
			}
			for k, v := range p.Labels {
				node.Metadata.Labels[k] = v
			}
			for l := 1; l <= p.Instance.NetworkNodeLayers; l++ {
				node.Metadata.Labels[fmt.Sprintf("%s%d", topology.LabelNetworkNodeLayerPrefix, l)] = fmt.Sprintf("nn-%d", l)
			}
			for _, t := range p.Taints {
				node.Spec.Taints = append(node.Spec.Taints, Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
			}
			node.Status.Allocatable = kubeletAllocatable(p)
			node.Status.Conditions = ready
			c.Nodes = append(c.Nodes, node)
			for _, a := range agents(p) {
				var pod Pod
				pod.Metadata = Meta{Name: a.name + "-" + node.Metadata.Name, Namespace: "kube-system", Labels: map[string]string{"app.kubernetes.io/name": a.name}}
				pod.Spec.NodeName, pod.Status.Phase, pod.Status.Conditions = node.Metadata.Name, "Running", ready
				c.Pods = append(c.Pods, pod)
			}
		}
		object := func(resource, name, namespace string, cond Condition, status string) {
			var o Object
			o.Metadata = Meta{Name: name, Namespace: namespace}
			o.Status.Conditions, o.Status.Status = []Condition{cond}, status
			c.Objects[resource] = append(c.Objects[resource], o)
		}
		if p.Provisioner == topology.ProvisionerKarpenter {
			name := topology.PoolResourceName(spec.Cluster.Name, p.Name)
			object(ResourceNodePools, name, "", Condition{Type: "Ready", Status: "True"}, "")
			object(ResourceNodeClasses, name, "", Condition{Type: "Ready", Status: "True"}, "")
		}
		if p.Benchmark != nil && p.Benchmark.Queue != nil {
			object(ResourceClusterQueues, p.Benchmark.Queue.Name, "", Condition{Type: "Active", Status: "True"}, "")
		}
		if cd := p.TrainingPod.ComputeDomain; cd != nil {
			object(ResourceComputeDomains, cd.Name, topology.BenchmarkNamespace, Condition{}, topology.ComputeDomainStatusReady)
		}
	}
	// The system node group's nodes: labelled with the system pool (the cluster component's node
	// group labels, topology.SystemPool), untainted, running no GPU agent. Every real cluster has
	// them, and verify must say nothing of them.
	for i := range spec.Cluster.SystemNodes.Count {
		var node Node
		node.Metadata.Name = fmt.Sprintf("system-%d", i)
		node.Metadata.Labels = map[string]string{topology.LabelPool: "system", topology.LabelInstanceType: spec.Cluster.SystemNodes.InstanceType}
		node.Status.Conditions = ready
		c.Nodes = append(c.Nodes, node)
	}
	for _, r := range objectsNeeded(spec) {
		if _, ok := c.Objects[r]; !ok {
			c.Objects[r] = nil
		}
	}
	return c
}

// nodeCPUMemory is what the kubelet of each type in stacks/ reports as allocatable CPU, memory and
// pods, written out apart from the figure the training pods are sized from (topology's
// allocatable.go), so that a sizing that outgrows a real node shows here as training-pods-unfit:
//   - p4d.24xlarge and g6e.12xlarge: real EKS AL2023 nodes (kubectl describe node;
//     gnosia93/training-on-eks chapter/c8-scheduling-evit.md, a Karpenter p4d node; and
//     pdefusco/cdp-kubectl-examples README.md, a g6e.12xlarge whose kubelet keeps back 375m);
//   - the others, with no real node found: EKS's reservations worked by hand (CPU 6% of the
//     first core, 1% of the second, 0.5% of the next two, 0.25% of the rest; memory 95% of the
//     type's, less 255 MiB + 11 MiB per pod (250 from 30 vCPUs, 110 below) and 100 MiB eviction).
var nodeCPUMemory = map[string][3]string{
	"p4d.24xlarge":       {"95690m", "1167634920Ki", "737"},
	"g6e.12xlarge":       {"47625m", "389057064Ki", "110"},
	"p5.48xlarge":        {"191450m", "1989189Mi", "250"}, // 192000 − 550; 2,097,152 × 0.95 − 3,105
	"g6e.48xlarge":       {"191450m", "1491115Mi", "250"}, // 1,572,864 × 0.95 − 3,105
	"g6e.xlarge":         {"3920m", "29564Mi", "110"},     // 4000 − 80; 32,768 × 0.95 − 1,565
	"p6e-gb200.36xlarge": {"143570m", "930783Mi", "250"},  // 144000 − 430; 983,040 × 0.95 − 3,105
}

// kubeletAllocatable is a node of the pool as its kubelet registers it: nodeCPUMemory, the GPUs
// the NVIDIA device plugin advertises and the EFA devices of the pool's interfaces.
func kubeletAllocatable(p topology.PoolSpec) map[string]string {
	cm, ok := nodeCPUMemory[p.Instance.Name]
	if !ok {
		panic("no allocatable written out for " + p.Instance.Name + ": add it to nodeCPUMemory")
	}
	a := map[string]string{"cpu": cm[0], "memory": cm[1], "pods": cm[2], topology.ResourceGPU: fmt.Sprint(p.Instance.GPUCount)}
	if p.Network.EFAInterfaces > 0 {
		a[topology.ResourceEFA] = fmt.Sprint(p.Network.EFAInterfaces)
	}
	return a
}

func TestEveryStackBuiltToItsSpecPasses(t *testing.T) {
	files, _ := filepath.Glob("../../stacks/Pulumi.*.yaml")
	if len(files) == 0 {
		t.Fatal("no stacks")
	}
	for _, f := range files {
		spec := loadStack(t, topology.StackName(f))
		r := Check(spec, builtToSpec(spec))
		if len(r.Findings) != 0 {
			t.Errorf("%s: a cluster built to the spec has findings: %+v", spec.Stack, r.Findings)
		}
		if len(r.Pools) != len(spec.Pools) {
			t.Errorf("%s: %d pools reported, the spec has %d", spec.Stack, len(r.Pools), len(spec.Pools))
		}
	}
}

// nodeOf is the first node of the pool.
func nodeOf(c *Cluster, pool string) *Node {
	for i := range c.Nodes {
		if c.Nodes[i].Metadata.Labels[topology.LabelPool] == pool {
			return &c.Nodes[i]
		}
	}
	return nil
}

func objectOf(c *Cluster, resource string) *Object { return &c.Objects[resource][0] }

// TestEachFaultIsNamed breaks one thing of a cluster built to the spec and wants exactly the
// findings that say so, on the node or object broken, each with a fix.
func TestEachFaultIsNamed(t *testing.T) {
	cases := []struct {
		name, stack string
		fault       func(c *Cluster)
		want        []string // codes, in order
		node        bool     // the findings name the broken node
	}{
		{"a node with 0 EFA allocatable", "p5-efa", func(c *Cluster) { nodeOf(c, "gpu").Status.Allocatable[topology.ResourceEFA] = "0" }, []string{CodeEFAAllocatable}, true},
		{"no EFA resource at all", "g6e-efa", func(c *Cluster) { delete(nodeOf(c, "gpu").Status.Allocatable, topology.ResourceEFA) }, []string{CodeEFAAllocatable}, true},
		{"less memory than the training pods request", "g6e-efa", func(c *Cluster) { nodeOf(c, "gpu").Status.Allocatable["memory"] = "345Gi" }, []string{CodeTrainingPodsUnfit}, true},
		{"less CPU than the training pods request", "p4d-pod-per-gpu", func(c *Cluster) { nodeOf(c, "gpu").Status.Allocatable["cpu"] = "90" }, []string{CodeTrainingPodsUnfit}, true},
		{"a GPU lost", "p4d-efa", func(c *Cluster) { nodeOf(c, "gpu").Status.Allocatable[topology.ResourceGPU] = "7" }, []string{CodeGPUAllocatable}, true},
		{"a missing device-plugin pod", "p5-efa", func(c *Cluster) {
			c.Pods = slices.DeleteFunc(c.Pods, func(p Pod) bool {
				return p.Spec.NodeName == nodeOf(c, "gpu").Metadata.Name && p.Metadata.Labels["app.kubernetes.io/name"] == "aws-efa-k8s-device-plugin"
			})
		}, []string{CodeAgentMissing}, true},
		// p5-efa runs benchmarks: without its reader the job's EFA counters go unread.
		{"no EFA counters reader", "p5-efa", func(c *Cluster) {
			c.Pods = slices.DeleteFunc(c.Pods, func(p Pod) bool {
				return p.Spec.NodeName == nodeOf(c, "gpu").Metadata.Name && p.Metadata.Labels["app.kubernetes.io/name"] == topology.EFACountersReader
			})
		}, []string{CodeAgentMissing}, true},
		{"a device-plugin pod terminating", "p5-efa", func(c *Cluster) { // still Ready, but going: the node is about to lose it
			gone := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
			for i := range c.Pods {
				if c.Pods[i].Spec.NodeName == nodeOf(c, "gpu").Metadata.Name && c.Pods[i].Metadata.Labels["app.kubernetes.io/name"] == "nvidia-device-plugin" {
					c.Pods[i].Metadata.DeletionTimestamp = &gone
				}
			}
		}, []string{CodeAgentMissing}, true},
		{"a device-plugin pod not Ready", "g6e-efa", func(c *Cluster) {
			for i := range c.Pods {
				if c.Pods[i].Spec.NodeName == nodeOf(c, "gpu").Metadata.Name && c.Pods[i].Metadata.Labels["app.kubernetes.io/name"] == "nvidia-device-plugin" {
					c.Pods[i].Status.Conditions = []Condition{{Type: "Ready", Status: "False", Reason: "ContainersNotReady"}}
				}
			}
		}, []string{CodeAgentNotReady}, true},
		{"a startup taint left", "p5-efa", func(c *Cluster) {
			n := nodeOf(c, "gpu")
			n.Spec.Taints = append(n.Spec.Taints, Taint{Key: topology.HealthTaint.Key, Value: topology.HealthTaint.Value, Effect: topology.HealthTaint.Effect})
		}, []string{CodeStartupTaint}, true},
		{"a failed health gate", "g6e-efa", func(c *Cluster) { // one finding, not a second for the taint it keeps
			n := nodeOf(c, "gpu")
			n.Spec.Taints = append(n.Spec.Taints, Taint{Key: topology.HealthTaint.Key, Value: topology.HealthTaint.Value, Effect: topology.HealthTaint.Effect})
			n.Metadata.Labels[topology.LabelHealthFailed] = topology.HealthCheckEFA
		}, []string{CodeHealthFailed}, true},
		{"a failed gpucluster health check", "p5-efa", func(c *Cluster) { // the same code, its own message (TestDeepHealthFailureNamesTheCommand)
			n := nodeOf(c, "gpu")
			n.Spec.Taints = append(n.Spec.Taints, Taint{Key: topology.HealthTaint.Key, Value: topology.HealthTaint.Value, Effect: topology.HealthTaint.Effect})
			n.Metadata.Labels[topology.LabelHealthFailed] = topology.HealthCheckDiag
		}, []string{CodeHealthFailed}, true},
		{"the GPU taint gone", "g6e-efa", func(c *Cluster) { nodeOf(c, "gpu").Spec.Taints = nil }, []string{CodeTaint}, true},
		{"a wrong instance type", "p5-efa", func(c *Cluster) { nodeOf(c, "gpu").Metadata.Labels[topology.LabelInstanceType] = "p4d.24xlarge" }, []string{CodeInstanceType}, true},
		{"another zone", "p5-efa", func(c *Cluster) { nodeOf(c, "gpu").Metadata.Labels[topology.LabelZone] = "us-west-2d" }, []string{CodeZone}, true},
		{"a pool label changed", "g6e-efa", func(c *Cluster) { nodeOf(c, "gpu").Metadata.Labels[topology.LabelEFA] = "false" }, []string{CodeLabel}, true},
		{"a node not Ready", "p4d-efa", func(c *Cluster) {
			nodeOf(c, "gpu").Status.Conditions = []Condition{{Type: "Ready", Status: "Unknown", Reason: "NodeStatusUnknown"}}
		}, []string{CodeNodeNotReady}, true},
		{"a node missing", "p5-efa", func(c *Cluster) { c.Nodes = c.Nodes[1:] }, []string{CodeNodeCount}, false},
		{"a node being deleted", "p5-efa", func(c *Cluster) { // going: the pool is short of it already
			gone := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
			nodeOf(c, "gpu").Metadata.DeletionTimestamp = &gone
		}, []string{CodeNodeCount}, false},
		{"no network-node labels", "p5-efa", func(c *Cluster) {
			delete(nodeOf(c, "gpu").Metadata.Labels, topology.LabelNetworkNodeLayerPrefix+"3")
		}, []string{CodeNetworkNodeLabels}, true},
		{"a NodePool not Ready", "karpenter-p5", func(c *Cluster) {
			objectOf(c, ResourceNodePools).Status.Conditions = []Condition{{Type: "Ready", Status: "False", Reason: "NodeClassNotReady", Message: "EC2NodeClass not ready"}}
		}, []string{CodeNodePoolNotReady}, false},
		{"an EC2NodeClass missing", "karpenter-p5", func(c *Cluster) { c.Objects[ResourceNodeClasses] = []Object{} }, []string{CodeNodeClassNotReady}, false},
		{"a ClusterQueue inactive", "p5-efa", func(c *Cluster) {
			objectOf(c, ResourceClusterQueues).Status.Conditions = []Condition{{Type: "Active", Status: "False", Reason: "FlavorNotFound"}}
		}, []string{CodeQueueInactive}, false},
		{"Kueue not installed", "p5-efa", func(c *Cluster) {
			delete(c.Objects, ResourceClusterQueues)
			c.Unserved = []string{ResourceClusterQueues}
		}, []string{CodeNotInstalled}, false},
		{"a ComputeDomain not Ready", "gb200-nvl72", func(c *Cluster) { objectOf(c, ResourceComputeDomains).Status.Status = "NotReady" }, []string{CodeComputeDomainReady}, false},
		{"a node of a pool the stack lacks", "g6e-efa", func(c *Cluster) {
			var n Node
			n.Metadata = Meta{Name: "stray", Labels: map[string]string{topology.LabelPool: "old-pool"}}
			c.Nodes = append(c.Nodes, n)
		}, []string{CodeUnknownPool}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := loadStack(t, tc.stack)
			c := builtToSpec(spec)
			tc.fault(c)
			r := Check(spec, c)
			var codes []string
			for _, f := range r.Findings {
				codes = append(codes, f.Code)
				if f.Fix == "" || f.Message == "" {
					t.Errorf("finding without message or fix: %+v", f)
				}
				if tc.node && f.Node == "" {
					t.Errorf("the finding names no node: %+v", f)
				}
			}
			if !slices.Equal(codes, tc.want) {
				t.Errorf("findings %v, want %v: %+v", codes, tc.want, r.Findings)
			}
			// Every fault is an error that fails verify (and stops bench run), but a stray node of
			// another pool, which may be another stack's: written out here, not read from Codes.
			for _, f := range r.Findings {
				if want := map[bool]string{true: topology.SeverityWarning, false: topology.SeverityError}[f.Code == CodeUnknownPool]; f.Severity != want {
					t.Errorf("%s is a %s, want %s", f.Code, f.Severity, want)
				}
			}
			if r.Errors+r.Warnings != len(r.Findings) {
				t.Errorf("%d errors and %d warnings counted for %d findings", r.Errors, r.Warnings, len(r.Findings))
			}
		})
	}
}

// TestAnExpiredStackWantsNoNodes: after the expiry, the plan is every pool at zero (AtTime), so
// nodes still up are named.
func TestAnExpiredStackWantsNoNodes(t *testing.T) {
	spec := loadStack(t, "p5-efa")
	c := builtToSpec(spec)
	spec.Expiry = testDay.Add(-time.Hour).Format(time.RFC3339)
	r := Check(spec.AtTime(testDay), c)
	if len(r.Findings) == 0 || r.Findings[0].Code != CodeNodeCount || !strings.Contains(r.Findings[0].Message, "the plan has 0") {
		t.Errorf("an expired stack with its nodes up: %+v", r.Findings)
	}
}

// TestAnotherClusterIsSuspected: a kubeconfig of another cluster has none of the pools' nodes,
// and the fix says to check it.
func TestAnotherClusterIsSuspected(t *testing.T) {
	spec := loadStack(t, "g6e-efa")
	r := Check(spec, &Cluster{Objects: map[string][]Object{ResourceClusterQueues: nil}})
	if len(r.Findings) == 0 || !strings.Contains(r.Findings[0].Fix, "aws eks update-kubeconfig --name "+spec.Cluster.Name) {
		t.Errorf("no hint at the kubeconfig: %+v", r.Findings)
	}
}

// BenchmarkCheck checks a cluster built to a p5-efa stack of n nodes: four agents' pods each,
// so its cost grows with nodes times pods if the pods are scanned per node.
func BenchmarkCheck(b *testing.B) {
	for _, n := range []int{16, 256, 1024} {
		b.Run(fmt.Sprint(n, "-nodes"), func(b *testing.B) {
			spec, err := topology.LoadStack(filepath.Join("..", "..", "stacks", "Pulumi.p5-efa.yaml"), testDay)
			if err != nil {
				b.Fatal(err)
			}
			spec.Pools[0].Scaling.DesiredNodes = n
			c := builtToSpec(spec)
			b.ReportAllocs()
			for b.Loop() {
				if r := Check(spec, c); r.Errors != 0 {
					b.Fatal(r.Findings[0])
				}
			}
		})
	}
}

// TestDeepHealthFailureNamesTheCommand: a node `gpucluster health` failed is said to be its, with
// that command to check it again, not the gate's pod to restart.
func TestDeepHealthFailureNamesTheCommand(t *testing.T) {
	spec := loadStack(t, "p5-efa")
	c := builtToSpec(spec)
	n := nodeOf(c, "gpu")
	n.Spec.Taints = append(n.Spec.Taints, Taint{Key: topology.HealthTaint.Key, Value: topology.HealthTaint.Value, Effect: topology.HealthTaint.Effect})
	n.Metadata.Labels[topology.LabelHealthFailed] = topology.HealthCheckPairAllReduce
	r := Check(spec, c)
	if len(r.Findings) != 1 || !strings.Contains(r.Findings[0].Message, "gpucluster health's pair-allreduce check failed") ||
		!strings.Contains(r.Findings[0].Fix, "gpucluster health --stack p5-efa") {
		t.Errorf("findings %+v", r.Findings)
	}
}
