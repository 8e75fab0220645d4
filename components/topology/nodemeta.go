package topology

import (
	"maps"
	"slices"
)

// labelDomain prefixes the labels gpucluster sets itself; users may not set them.
const labelDomain = "gpucluster.io/"

// Node labels every pool carries.
const (
	// LabelPool names the pool: the node selector of the training pod and of per-pool pieces.
	LabelPool = labelDomain + "pool"
	// LabelEFA is "true" on EFA pools: the EFA device plugin's node selector.
	LabelEFA = labelDomain + "efa"
	// LabelGPUPresent is the label the NVIDIA device plugin's chart selects GPU nodes by.
	LabelGPUPresent = "nvidia.com/gpu.present"
)

// Well-known labels the kubelet sets on every node (Kubernetes "Well-Known Labels, Annotations
// and Taints"): what a pool's requirements and `gpucluster verify` read a node's type and zone by.
const (
	LabelInstanceType = "node.kubernetes.io/instance-type"
	LabelZone         = "topology.kubernetes.io/zone"
)

// AWS tags gpucluster puts on every resource it creates (the label domain's counterpart).
const (
	TagCluster = labelDomain + "cluster"
	TagStack   = labelDomain + "stack"
)

// gpuTaint keeps non-GPU pods off GPU nodes. Every in-cluster piece that must run on GPU nodes
// tolerates it; eksctl's EFA device plugin does not, and never lands on tainted GPU nodes.
var gpuTaint = Taint{Key: ResourceGPU, Value: "true", Effect: "NoSchedule"}

var gpuToleration = Toleration{Key: ResourceGPU, Operator: "Exists", Effect: "NoSchedule"}

// startupTaints are the taints a pool's nodes start with and lose once initialized: every GPU
// node's HealthTaint, which its health gate lifts.
func startupTaints() []Taint { return []Taint{HealthTaint} }

// StartupTolerations are what the in-cluster pieces that initialize a node carry besides the
// pool's tolerations: one per startup taint.
func (p PoolSpec) StartupTolerations() []Toleration {
	var out []Toleration
	for _, t := range p.StartupTaints {
		out = append(out, Toleration{Key: t.Key, Operator: "Equal", Value: t.Value, Effect: t.Effect})
	}
	return out
}

// NodeTolerations are what a pod needs to run on every node of the pools, each once: each pool's
// tolerations (of its own taints, which validation requires) and its startup taints' (the
// health gate's, which is also the one `gpucluster health` holds a node with).
func NodeTolerations(pools []PoolSpec) []Toleration {
	seen := map[Toleration]bool{}
	var out []Toleration
	for _, p := range pools {
		for _, t := range append(append([]Toleration{}, p.Tolerations...), p.StartupTolerations()...) {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// poolLabels are the node labels of a pool: gpucluster's own, then the user's.
func poolLabels(name string, p Profile) map[string]string {
	labels := map[string]string{LabelPool: name, LabelGPUPresent: "true"}
	if p.Fabric == FabricEFA {
		labels[LabelEFA] = "true"
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	return labels
}

// poolTaints are the GPU taint followed by the user's taints.
func poolTaints(p Profile) []Taint {
	return append([]Taint{gpuTaint}, p.Taints...)
}

// poolTolerations are what every in-cluster piece on the pool carries: the GPU toleration and
// the user's (validation proves they cover every repelling taint).
func poolTolerations(p Profile) []Toleration {
	return append([]Toleration{gpuToleration}, p.Tolerations...)
}

func sortedKeys[V any](m map[string]V) []string { return SortedKeys(m) }

// Discovery tags. Karpenter's EC2NodeClass selects subnets and security groups by the first (the
// network and cluster components tag them); TagZone lets a pool's EC2NodeClass select the
// private subnet of its own zone.
const (
	TagKarpenterDiscovery = "karpenter.sh/discovery"
	TagZone               = labelDomain + "zone"
)

// SystemPool is the pool label value of the untainted system node group.
const SystemPool = "system"

// PoolResourceName names every AWS and Kubernetes object of a pool: "<cluster>-<pool>" (node
// group, launch template, placement group, EC2NodeClass, NodePool), deterministic so that an
// EC2NodeClass selects its placement group by name and a reviewer finds each. The cluster and
// pool name limits keep it within EKS's 63 characters.
func PoolResourceName(cluster, pool string) string { return cluster + "-" + pool }

// Tags are the ownership and cost-allocation tags gpucluster puts on every AWS resource of a
// stack (activate them as cost allocation tags to see the stack in Cost Explorer).
func (s StackSpec) Tags() map[string]string {
	t := map[string]string{TagCluster: s.Cluster.Name, TagStack: s.Stack}
	if s.Owner != "" {
		t[TagOwner] = s.Owner
	}
	return t
}

// SortedKeys returns a map's keys in order: output and reports never depend on map order.
func SortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// IMDSHopLimit is the instance metadata PUT response hop limit of every node (launch templates
// and Karpenter's EC2NodeClass alike). 1 keeps IMDSv2 tokens, and so the node role's credentials,
// out of pods in the pod network: their traffic is one hop behind the node. It does nothing for a
// pod on the host's network, which is no hop away: those reach the node role, whatever the limit.
// On gpucluster's nodes these are the VPC CNI and kube-proxy (EKS add-ons that need it) and the
// EFA device plugin as its chart ships it (components/deviceplugin); the fabric-manager gate and
// the training pods are not (components/fabricmanager, TrainingPod.HostNetwork). Nothing gpucluster runs needs more than 1: the Karpenter controller
// uses EKS Pod Identity. It is Karpenter's default too.
const IMDSHopLimit = 1
