package verify

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Check compares the cluster with the spec (as `pulumi up` would apply it now: an expired
// stack's pools at zero, StackSpec.AtTime).
func Check(spec topology.StackSpec, c *Cluster) Report {
	ch := &checker{spec: spec, cluster: c, report: Report{Stack: spec.Stack, Source: spec.Source, Pools: []PoolState{}, Findings: []Finding{}},
		podsOn: map[string][]Pod{}}
	for _, pod := range c.Pods { // by node: each node's agents are looked up without a scan of every pod
		ch.podsOn[pod.Spec.NodeName] = append(ch.podsOn[pod.Spec.NodeName], pod)
	}
	for _, r := range c.Unserved {
		ch.add(Finding{Severity: topology.SeverityError, Code: CodeNotInstalled, Object: r,
			Message: fmt.Sprintf("the API server does not serve %s: its CRD is not installed", r),
			Fix:     fmt.Sprintf("pulumi up -s %s installs its controller's chart; if it did, KUBECONFIG names another cluster (aws eks update-kubeconfig --name %s)", spec.Stack, spec.Cluster.Name)})
	}
	known := map[string]bool{}
	for _, p := range spec.Pools {
		known[p.Name] = true
		ch.pool(p)
	}
	for _, n := range c.Nodes {
		if pool, ok := n.Metadata.Labels[topology.LabelPool]; ok && pool != topology.SystemPool && !known[pool] {
			ch.add(Finding{Severity: topology.SeverityWarning, Code: CodeUnknownPool, Pool: pool, Node: n.Metadata.Name,
				Message: fmt.Sprintf("the node carries %s=%s, a pool stack %s does not have", topology.LabelPool, pool, spec.Stack),
				Fix:     "a pool removed from the stack file whose nodes remain (pulumi up -s " + spec.Stack + " removes them), or another stack's node: check that KUBECONFIG names this stack's cluster"})
		}
	}
	for _, f := range ch.report.Findings {
		if f.Severity == topology.SeverityError {
			ch.report.Errors++
		} else {
			ch.report.Warnings++
		}
	}
	return ch.report
}

type checker struct {
	spec    topology.StackSpec
	cluster *Cluster
	report  Report
	podsOn  map[string][]Pod // the agents' pods by node
}

func (ch *checker) add(f Finding) { ch.report.Findings = append(ch.report.Findings, f) }

// pool checks one pool: its node count, each node, and its controllers' objects.
func (ch *checker) pool(p topology.PoolSpec) {
	var nodes []Node
	for _, n := range ch.cluster.Nodes {
		if n.Metadata.Labels[topology.LabelPool] == p.Name && n.Metadata.DeletionTimestamp == nil {
			nodes = append(nodes, n)
		}
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Metadata.Name < nodes[j].Metadata.Name })
	state := PoolState{Name: p.Name, Instance: p.Instance.Name, Provisioner: string(p.Provisioner), Nodes: []string{}}
	for _, n := range nodes {
		state.Nodes = append(state.Nodes, n.Metadata.Name)
	}
	lo, hi := topology.PlannedNodes(p)
	state.Planned = strconv.Itoa(hi)
	if lo != hi {
		state.Planned = fmt.Sprintf("%d-%d", lo, hi)
	}
	ch.report.Pools = append(ch.report.Pools, state)
	if len(nodes) < lo || len(nodes) > hi {
		ch.add(Finding{Severity: topology.SeverityError, Code: CodeNodeCount, Pool: p.Name,
			Message: fmt.Sprintf("%d node(s) carry %s=%s; the plan has %s", len(nodes), topology.LabelPool, p.Name, state.Planned),
			Fix:     ch.nodeCountFix(p, len(nodes) < lo)})
	}
	for _, n := range nodes {
		ch.node(p, n)
	}
	ch.controllers(p, len(nodes))
}

func (ch *checker) nodeCountFix(p topology.PoolSpec, fewer bool) string {
	name := topology.PoolResourceName(ch.spec.Cluster.Name, p.Name)
	switch {
	case !fewer:
		return fmt.Sprintf("more nodes than the plan: the pool was resized outside the stack (pulumi refresh -s %s shows it), or its nodes are still going", ch.spec.Stack)
	case !ch.anyPoolNode():
		return fmt.Sprintf("no node of any of the stack's pools: is KUBECONFIG this stack's cluster (aws eks update-kubeconfig --name %s)? If it is, the nodes have not joined: aws eks describe-nodegroup --cluster-name %s --nodegroup-name %s shows why (README, Troubleshooting)",
			ch.spec.Cluster.Name, ch.spec.Cluster.Name, name)
	default:
		return fmt.Sprintf("the node group has not brought every node up: aws eks describe-nodegroup --cluster-name %s --nodegroup-name %s shows its health issues (InsufficientInstanceCapacity, a vCPU quota; README, Troubleshooting)",
			ch.spec.Cluster.Name, name)
	}
}

func (ch *checker) anyPoolNode() bool {
	for _, n := range ch.cluster.Nodes {
		for _, p := range ch.spec.Pools {
			if n.Metadata.Labels[topology.LabelPool] == p.Name {
				return true
			}
		}
	}
	return false
}

// node checks one node of the pool against what the pool's nodes register.
func (ch *checker) node(p topology.PoolSpec, n Node) {
	name := n.Metadata.Name
	add := func(code, msg, fix string) {
		ch.add(Finding{Severity: topology.SeverityError, Code: code, Pool: p.Name, Node: name, Message: msg, Fix: fix})
	}
	labels := n.Metadata.Labels
	if r := n.Ready(); r.Status != "True" {
		add(CodeNodeNotReady, fmt.Sprintf("the node is not Ready (Ready=%s %s)", orNone(r.Status), strings.TrimSpace(r.Reason+" "+r.Message)),
			"kubectl describe node "+name+": its conditions and events say why (the kubelet, the VPC CNI)")
	}
	if got := labels[topology.LabelInstanceType]; got != p.Instance.Name {
		add(CodeInstanceType, fmt.Sprintf("%s is %s; the pool's nodes are %s", topology.LabelInstanceType, orNone(got), p.Instance.Name),
			fmt.Sprintf("the pool launches only %s: this node was launched or labelled outside the stack (kubectl get node %s -o yaml: its providerID and labels say who made it)", p.Instance.Name, name))
	}
	if zone := labels[topology.LabelZone]; len(p.AvailabilityZones) > 0 && !slices.Contains(p.AvailabilityZones, zone) {
		add(CodeZone, fmt.Sprintf("%s is %s; the pool's zones are %s", topology.LabelZone, orNone(zone), strings.Join(p.AvailabilityZones, ", ")),
			"the pool's subnets are in its zones, and EFA traffic does not leave a subnet: this node was launched outside the stack's node group or NodePool")
	}
	for _, k := range topology.SortedKeys(p.Labels) {
		if got, ok := labels[k]; !ok || got != p.Labels[k] {
			add(CodeLabel, fmt.Sprintf("label %s is %s; the pool's nodes have %s=%s", k, orNone(got), k, p.Labels[k]),
				fmt.Sprintf("pulumi up -s %s restores the node group's or NodePool's labels on new nodes; for this one: kubectl label node %s %s=%s --overwrite", ch.spec.Stack, name, k, p.Labels[k]))
		}
	}
	for _, t := range p.Taints {
		if !hasTaint(n.Spec.Taints, t) {
			add(CodeTaint, fmt.Sprintf("no taint %s=%s:%s: pods that do not belong on a GPU node may land here", t.Key, t.Value, t.Effect),
				fmt.Sprintf("kubectl taint node %s %s=%s:%s (the pool's nodes start with it)", name, t.Key, t.Value, t.Effect))
		}
	}
	failed, gateFailed := labels[topology.LabelHealthFailed]
	switch {
	case gateFailed && topology.IsDeepHealthCheck(failed):
		add(CodeHealthFailed, fmt.Sprintf("gpucluster health's %s check failed: the node keeps %s and takes no job", failed, topology.HealthTaint.Key),
			fmt.Sprintf("kubectl describe node %s: the %s event says what it found. Replace the node (or mend it), then gpucluster health --stack %s checks it again and, if it passes, gives it back",
				name, healthgate.ReasonFailed, ch.spec.Stack))
	case gateFailed:
		add(CodeHealthFailed, fmt.Sprintf("the health gate's %s check failed: the node keeps %s and takes no job", orNone(failed), topology.HealthTaint.Key),
			ch.healthFailedFix(p, name))
	}
	for _, t := range p.StartupTaints {
		if hasTaint(n.Spec.Taints, t) && !(gateFailed && t == topology.HealthTaint) {
			add(CodeStartupTaint, fmt.Sprintf("the startup taint %s=%s:%s is still on the node: its health gate has not passed yet, and no job starts here", t.Key, t.Value, t.Effect),
				ch.startupTaintFix(p, name))
		}
	}
	alloc := n.Status.Allocatable
	if p.InCluster.NVIDIADevicePlugin.Deploy {
		if got := quantity(alloc[topology.ResourceGPU]); got != p.Instance.GPUCount {
			add(CodeGPUAllocatable, fmt.Sprintf("allocatable %s is %d; a %s has %d", topology.ResourceGPU, got, p.Instance.Name, p.Instance.GPUCount),
				fmt.Sprintf("the NVIDIA device plugin advertises the GPUs NVML finds healthy: kubectl -n %s logs %s; a GPU lost to an XID shows in kubectl describe node %s (AcceleratedHardwareReady)",
					k8sargs.Namespace, ch.agentPodName(agentOf(p, topology.ResourceGPU), name), name))
		}
	}
	if p.InCluster.EFADevicePlugin.Deploy && p.Network.EFAInterfaces > 0 {
		if got := quantity(alloc[topology.ResourceEFA]); got != p.Network.EFAInterfaces {
			add(CodeEFAAllocatable, fmt.Sprintf("allocatable %s is %d; the pool's nodes have %d EFA interfaces", topology.ResourceEFA, got, p.Network.EFAInterfaces),
				fmt.Sprintf("the EFA device plugin advertises the devices under /dev/infiniband: kubectl -n %s logs %s; with it running, the instance has fewer EFA interfaces than its launch template asks (gpucluster plan --stack %s: networkInterfaces)",
					k8sargs.Namespace, ch.agentPodName(agentOf(p, topology.ResourceEFA), name), ch.spec.Stack))
		}
	}
	if why := topology.TrainingPodsUnfit(p, alloc); why != "" {
		add(CodeTrainingPodsUnfit, why+": no job of the pool starts on this node",
			fmt.Sprintf("the plan sizes the pods to what a %s offers after the reservations of EKS's node image (gpucluster plan --stack %s: trainingPod); this node keeps more back: kubectl describe node %s (Capacity, Allocatable). A custom image's or launch template's kubelet settings (kubeReserved, systemReserved, evictionHard) or huge pages take it: set them back, or report the node's figures to gpucluster",
				p.Instance.Name, ch.spec.Stack, name))
	}
	for _, a := range agents(p) {
		ch.agentOn(p, a, name)
	}
	if p.Benchmark != nil && p.Benchmark.Queue != nil && p.Benchmark.Queue.Topology != nil {
		var missing []string
		for _, l := range p.Benchmark.Queue.Topology.Levels {
			if _, ok := labels[l]; !ok {
				missing = append(missing, l)
			}
		}
		if len(missing) > 0 {
			add(CodeNetworkNodeLabels, fmt.Sprintf("no %s: Kueue places the pool's jobs by topology %s and counts only nodes with every level's label", strings.Join(missing, ", "), p.Benchmark.Queue.Topology.Name),
				"EKS sets them from EC2's instance topology when the node initializes; without them the cluster role lacks ec2:DescribeInstanceTopology (AmazonEKSClusterPolicy version 8 or later)")
		}
	}
}

// agentOf is the agent that advertises a resource.
func agentOf(p topology.PoolSpec, resource string) string {
	for _, a := range agents(p) {
		if a.advertises == resource {
			return a.name
		}
	}
	return ""
}

func (ch *checker) startupTaintFix(p topology.PoolSpec, node string) string {
	for _, a := range agents(p) {
		if a.liftsTaint {
			return fmt.Sprintf("the %s pod lifts it once the node passes its checks (%s): kubectl -n %s logs %s --all-containers (docs/bench.md, \"The health gate\")",
				a.name, p.HealthGate.Describe(), k8sargs.Namespace, ch.agentPodName(a.name, node))
		}
	}
	return "nothing of the stack lifts it on this pool: kubectl describe node " + node
}

func (ch *checker) healthFailedFix(p topology.PoolSpec, node string) string {
	pod := ch.agentPodName(healthgate.GateName, node)
	return fmt.Sprintf("kubectl describe node %s: the gate's %s event says what it found; kubectl -n %s logs %s --all-containers. "+
		"Replace the node (or mend it), then kubectl -n %s delete pod %s checks it again", node, healthgate.ReasonFailed, k8sargs.Namespace, pod, k8sargs.Namespace, pod)
}

// agentPods are the pods of an agent on a node.
func (ch *checker) agentPods(agent, node string) []Pod {
	var out []Pod
	for _, pod := range ch.podsOn[node] {
		if pod.Metadata.Labels["app.kubernetes.io/name"] == agent && pod.Metadata.DeletionTimestamp == nil {
			out = append(out, pod)
		}
	}
	return out
}

// agentPodName names the agent's pod on the node for a command to run, or how to find it.
func (ch *checker) agentPodName(agent, node string) string {
	if pods := ch.agentPods(agent, node); len(pods) > 0 {
		return pods[0].Metadata.Name
	}
	return fmt.Sprintf("<the %s pod on %s>", agent, node)
}

// agentOn checks that the node runs a Ready pod of the agent.
func (ch *checker) agentOn(p topology.PoolSpec, a agent, node string) {
	pods := ch.agentPods(a.name, node)
	if len(pods) == 0 {
		ch.add(Finding{Severity: topology.SeverityError, Code: CodeAgentMissing, Pool: p.Name, Node: node,
			Message: fmt.Sprintf("no %s pod runs on the node: %s", a.name, a.without),
			Fix: fmt.Sprintf("kubectl -n %s describe daemonset %s: a taint it does not tolerate or a selector that misses the node keeps its pod away; no such DaemonSet: pulumi up -s %s",
				k8sargs.Namespace, a.name, ch.spec.Stack)})
		return
	}
	for _, pod := range pods {
		if r := pod.Ready(); r.Status == "True" {
			return
		}
	}
	pod := pods[0]
	ch.add(Finding{Severity: topology.SeverityError, Code: CodeAgentNotReady, Pool: p.Name, Node: node,
		Message: fmt.Sprintf("%s/%s is not Ready (phase %s): %s", k8sargs.Namespace, pod.Metadata.Name, orNone(pod.Status.Phase), a.without),
		Fix:     fmt.Sprintf("kubectl -n %s describe pod %s, and kubectl -n %s logs %s --all-containers", k8sargs.Namespace, pod.Metadata.Name, k8sargs.Namespace, pod.Metadata.Name)})
}

// controllers checks the pool's objects: its NodePool and EC2NodeClass, its ClusterQueue, its
// ComputeDomain.
func (ch *checker) controllers(p topology.PoolSpec, nodes int) {
	if p.Provisioner == topology.ProvisionerKarpenter {
		name := topology.PoolResourceName(ch.spec.Cluster.Name, p.Name)
		ch.conditionTrue(p, ResourceNodePools, "NodePool", name, "", "Ready", CodeNodePoolNotReady,
			fmt.Sprintf("kubectl describe nodepool %s: its conditions say what Karpenter refuses (a NodeClass not Ready, a requirement no instance meets)", name))
		ch.conditionTrue(p, ResourceNodeClasses, "EC2NodeClass", name, "", "Ready", CodeNodeClassNotReady,
			fmt.Sprintf("kubectl describe ec2nodeclass %s: its conditions name what Karpenter could not resolve (subnets, security groups, the AMI, the instance profile)", name))
	}
	if p.Benchmark != nil && p.Benchmark.Queue != nil {
		q := p.Benchmark.Queue.Name
		ch.conditionTrue(p, ResourceClusterQueues, "ClusterQueue", q, "", "Active", CodeQueueInactive,
			fmt.Sprintf("kubectl describe clusterqueue %s: an inactive queue names what it lacks (its ResourceFlavor, its Topology)", q))
	}
	if cd := p.TrainingPod.ComputeDomain; cd != nil && nodes > 0 {
		ch.computeDomain(p, *cd)
	}
}

// find is the object of that name (and namespace), if the resource was read.
func (ch *checker) find(resource, name, namespace string) (Object, bool, bool) {
	objs, read := ch.cluster.Objects[resource]
	for _, o := range objs {
		if o.Metadata.Name == name && (namespace == "" || o.Metadata.Namespace == namespace) {
			return o, true, read
		}
	}
	return Object{}, false, read
}

func (ch *checker) conditionTrue(p topology.PoolSpec, resource, kind, name, namespace, typ, code, fix string) {
	o, found, read := ch.find(resource, name, namespace)
	if !read { // not served: said once, as not-installed
		return
	}
	object := kind + " " + name
	if !found {
		ch.add(Finding{Severity: topology.SeverityError, Code: code, Pool: p.Name, Object: object,
			Message: fmt.Sprintf("no %s %s in the cluster", kind, name), Fix: "pulumi up -s " + ch.spec.Stack + " creates it"})
		return
	}
	if c := condition(o.Status.Conditions, typ); c.Status != "True" {
		ch.add(Finding{Severity: topology.SeverityError, Code: code, Pool: p.Name, Object: object,
			Message: fmt.Sprintf("%s is not %s (%s=%s %s)", object, typ, typ, orNone(c.Status), strings.TrimSpace(c.Reason+": "+c.Message)),
			Fix:     fix})
	}
}

func (ch *checker) computeDomain(p topology.PoolSpec, cd topology.ComputeDomainSpec) {
	o, found, read := ch.find(ResourceComputeDomains, cd.Name, topology.BenchmarkNamespace)
	if !read {
		return
	}
	object := topology.ComputeDomainKind + " " + topology.BenchmarkNamespace + "/" + cd.Name
	fix := fmt.Sprintf("kubectl get computedomain %s -o yaml: status.nodes says which node's IMEX daemon is not ready; the daemons run in namespace %s", cd.Name, dradriver.Namespace)
	switch {
	case !found:
		ch.add(Finding{Severity: topology.SeverityError, Code: CodeComputeDomainReady, Pool: p.Name, Object: object,
			Message: "no such ComputeDomain: the pool's jobs claim its IMEX channel", Fix: "pulumi up -s " + ch.spec.Stack + " creates it"})
	case o.Status.Status != topology.ComputeDomainStatusReady:
		ch.add(Finding{Severity: topology.SeverityError, Code: CodeComputeDomainReady, Pool: p.Name, Object: object,
			Message: fmt.Sprintf("the ComputeDomain's status is %s, not %s: multi-node NVLink jobs get no IMEX channel", orNone(o.Status.Status), topology.ComputeDomainStatusReady), Fix: fix})
	}
}

func hasTaint(ts []Taint, want topology.Taint) bool {
	for _, t := range ts {
		if t.Key == want.Key && t.Value == want.Value && t.Effect == want.Effect {
			return true
		}
	}
	return false
}

// quantity reads a count resource ("8"); anything else (absent, malformed) is 0.
func quantity(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
