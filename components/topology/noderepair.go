package topology

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// NodeRepairSpec is whether EKS node auto repair acts on a pool's nodes, and why. With it on,
// EKS replaces a node (or, in a managed node group, may reboot it) whose accelerated hardware
// the node monitoring agent reports failing for 10 minutes (its AcceleratedHardwareReady
// condition: GPU XIDs, a missing GPU, fabric-manager failure) or that is NotReady for 30 (EKS UG
// "node-repair", the default repair actions; karpenter-provider-aws v1.14.1
// pkg/cloudprovider/cloudprovider.go RepairPolicies). The node monitoring agent add-on, which
// sets those conditions, is installed wherever a pool has it on.
type NodeRepairSpec struct {
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason"`
}

// deriveNodeRepair decides a pool's node repair: the pool's nodeRepair key, else on for a
// long-lived stack and off for a benchmark stack, where a node replaced mid-run would end the
// run or skew its numbers. Its reason says what repair covers on the pool's CPU architecture
// (repairCovers).
func deriveNodeRepair(key *bool, benchmarks bool, arch string) NodeRepairSpec {
	switch {
	case key != nil && *key:
		return NodeRepairSpec{Enabled: true, Reason: "nodeRepair: true: " + repairCovers(arch)}
	case key != nil:
		return NodeRepairSpec{Reason: "nodeRepair: false: a failed node stays until someone replaces it"}
	case benchmarks:
		return NodeRepairSpec{Reason: "off in a benchmark stack (benchmarks enabled): a node replaced mid-run would end the run or skew its numbers; set nodeRepair: true to repair anyway"}
	}
	return NodeRepairSpec{Enabled: true, Reason: "on by default: " + repairCovers(arch)}
}

// repairCovers says what EKS node repair acts on for nodes of an architecture. The node
// monitoring agent reads GPU faults through a DCGM server its chart runs on amd64 nodes only
// (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml,
// dcgmAgent.affinity: kubernetes.io/arch In [amd64], "Only schedule on amd64 nodes"; the agent
// itself runs on amd64 and arm64). On arm64 (p6e-gb200) no DCGM fault reaches
// AcceleratedHardwareReady: a failed GPU there is found by the pool's health gate when the node
// joins and by `gpucluster verify`, not replaced by EKS.
func repairCovers(arch string) string {
	if arch == catalog.ArchARM64 {
		return "EKS replaces a node that stays NotReady (30 minutes); on arm64 the node monitoring agent's chart runs no DCGM server, so a failed GPU does not trigger a repair: the health gate checks each node's GPUs when it joins and gpucluster verify reports a failed one"
	}
	return "EKS replaces a node whose GPU fails (the node monitoring agent's AcceleratedHardwareReady, through DCGM, 10 minutes) or that stays NotReady (30 minutes)"
}

// NodeRepairAnywhere says whether any pool has node repair on: the node monitoring agent goes
// where it does.
func (s StackSpec) NodeRepairAnywhere() bool {
	for _, p := range s.Pools {
		if p.NodeRepair.Enabled {
			return true
		}
	}
	return false
}

// KarpenterNodeRepair is the Karpenter controller's nodeRepair feature gate: on when the stack's
// Karpenter pools have repair on (checkKarpenterNodeRepair holds them to one value).
func (s StackSpec) KarpenterNodeRepair() bool {
	for _, p := range s.Pools {
		if p.Provisioner == ProvisionerKarpenter && p.NodeRepair.Enabled {
			return true
		}
	}
	return false
}

// checkKarpenterNodeRepair refuses Karpenter pools that disagree on node repair: Karpenter has
// one switch for it, the controller's nodeRepair feature gate (karpenter-provider-aws v1.14.1
// charts/karpenter/values.yaml settings.featureGates.nodeRepair, "ALPHA and disabled by
// default"), which acts on every NodePool.
func checkKarpenterNodeRepair(spec StackSpec, st Stack) error {
	var on, off []int
	for i, p := range spec.Pools {
		if p.Provisioner != ProvisionerKarpenter {
			continue
		}
		if p.NodeRepair.Enabled {
			on = append(on, i)
		} else {
			off = append(off, i)
		}
	}
	if len(on) == 0 || len(off) == 0 {
		return nil
	}
	names := func(is []int) string {
		var n []string
		for _, i := range is {
			n = append(n, spec.Pools[i].Name)
		}
		return strings.Join(n, ", ")
	}
	at := st.Pools[off[0]]
	if at.repairLine == 0 {
		at = st.Pools[on[0]]
	}
	return ConfigErrors{{File: st.File, Line: at.repairLine, Key: at.repairKey,
		Message: fmt.Sprintf("Karpenter pools %s repair nodes and %s do not, but Karpenter has one switch for node repair (its controller's nodeRepair feature gate), for every NodePool",
			names(on), names(off)),
		Fix: "give every Karpenter pool the same nodeRepair"}}
}
