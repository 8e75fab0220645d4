package topology

import (
	"fmt"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// NodeRepairSpec is whether a pool's failed nodes are replaced, by whom, and why. On a managed
// node group EKS node auto repair replaces a node (or may reboot it) whose accelerated hardware
// the node monitoring agent reports failing for 10 minutes (its AcceleratedHardwareReady
// condition: GPU XIDs, a missing GPU, fabric-manager failure) or that is NotReady for 30 (EKS UG
// "node-repair", the default repair actions). On a Karpenter pool Karpenter does, by its own
// policies (karpenterKnownXIDRepairMinutes and the times beside it). The node monitoring agent add-on, which sets those conditions, is
// installed wherever a pool has it on.
type NodeRepairSpec struct {
	Enabled bool   `json:"enabled"`
	Reason  string `json:"reason"`
	// UnhealthyBudget is, on a Karpenter pool, how many of its nodes Karpenter may repair at
	// once: from Karpenter 1.15 repair is a disruption method that obeys the NodePool's budgets
	// under the reason Unhealthy (karpenter-provider-aws v1.15.2 pkg/apis/crds/
	// karpenter.sh_nodepools.yaml, spec.disruption.budgets[].reasons). The controller's nodeRepair
	// gate is one for every NodePool, so a pool without repair beside one with it gets "0", which
	// holds repair off it for as long as the budget stands (every budget of gpucluster's does);
	// a pool with repair gets "1": a GPU pool loses at most one node at a time to repair.
	// Empty on a managed node group.
	UnhealthyBudget string `json:"unhealthyBudget,omitempty"`
}

// Karpenter's repair of a pool's nodes, in pkg/cloudprovider/cloudprovider.go RepairPolicies of
// karpenter-provider-aws v1.15.2 (held to it by noderepair_test.go): a node whose GPU fails with
// an XID its policies name is repaired after 10 minutes and drained for at most 5; any other GPU
// fault, a NotReady node (and the agent's storage, networking, kernel and runtime conditions)
// after 30, drained for at most 10. The replacement is launched before the node goes. Those
// policies replace; a reboot for the reboot-clearable XIDs needs the RebootForRepair gate, which
// gpucluster leaves off (components/karpenter: a reboot needs ec2:RebootInstances, not granted).
const (
	karpenterKnownXIDRepairMinutes = 10
	karpenterGPURepairMinutes      = 30
	karpenterNotReadyRepairMinutes = 30
)

// deriveNodeRepair decides a pool's node repair: the pool's nodeRepair key, else on for a
// long-lived stack and off for a benchmark stack, where a node replaced mid-run would end the
// run or skew its numbers. Its reason says what repair covers for the pool's provisioner and CPU
// architecture (repairCovers).
func deriveNodeRepair(key *bool, benchmarks bool, arch string, provisioner Provisioner) NodeRepairSpec {
	var r NodeRepairSpec
	switch {
	case key != nil && *key:
		r = NodeRepairSpec{Enabled: true, Reason: "nodeRepair: true: " + repairCovers(arch, provisioner)}
	case key != nil:
		r = NodeRepairSpec{Reason: "nodeRepair: false: a failed node stays until someone replaces it"}
	case benchmarks:
		r = NodeRepairSpec{Reason: "off in a benchmark stack (benchmarks enabled): a node replaced mid-run would end the run or skew its numbers; set nodeRepair: true to repair anyway"}
	default:
		r = NodeRepairSpec{Enabled: true, Reason: "on by default: " + repairCovers(arch, provisioner)}
	}
	if provisioner == ProvisionerKarpenter {
		r.UnhealthyBudget = "0"
		if r.Enabled {
			r.UnhealthyBudget = "1"
		} else {
			r.Reason += "; the NodePool's disruption budget for Unhealthy nodes is 0, so Karpenter repairs none of its nodes even where it repairs another pool's"
		}
	}
	return r
}

// repairCovers says what node repair acts on for nodes of a provisioner and architecture. The
// node monitoring agent reads GPU faults through a DCGM server its chart runs on amd64 nodes only
// (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml,
// dcgmAgent.affinity: kubernetes.io/arch In [amd64], "Only schedule on amd64 nodes"; the agent
// itself runs on amd64 and arm64). On arm64 (p6e-gb200) no DCGM fault reaches
// AcceleratedHardwareReady: a failed GPU there is found by the pool's health gate when the node
// joins and by `gpucluster verify`, not replaced.
func repairCovers(arch string, provisioner Provisioner) string {
	who, gpu, notReady := "EKS", "the node monitoring agent's AcceleratedHardwareReady, through DCGM, 10 minutes", "30 minutes"
	if provisioner == ProvisionerKarpenter {
		who = "Karpenter"
		gpu = fmt.Sprintf("the node monitoring agent's AcceleratedHardwareReady, through DCGM: %d minutes for the XIDs Karpenter's policies name, %d for any other",
			karpenterKnownXIDRepairMinutes, karpenterGPURepairMinutes)
		notReady = fmt.Sprintf("%d minutes; one node of the pool at a time, its replacement launched first", karpenterNotReadyRepairMinutes)
	}
	if arch == catalog.ArchARM64 {
		return who + " replaces a node that stays NotReady (" + notReady + "); on arm64 the node monitoring agent's chart runs no DCGM server, so a failed GPU does not trigger a repair: the health gate checks each node's GPUs when it joins and gpucluster verify reports a failed one"
	}
	return who + " replaces a node whose GPU fails (" + gpu + ") or that stays NotReady (" + notReady + ")"
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

// KarpenterNodeRepair is the Karpenter controller's nodeRepair feature gate (karpenter-provider-aws
// v1.15.2 charts/karpenter/values.yaml settings.featureGates.nodeRepair, "ALPHA and disabled by
// default"), one for every NodePool: on when any Karpenter pool repairs its nodes; the others
// keep repair off by their budgets (NodeRepairSpec.UnhealthyBudget).
func (s StackSpec) KarpenterNodeRepair() bool {
	for _, p := range s.Pools {
		if p.Provisioner == ProvisionerKarpenter && p.NodeRepair.Enabled {
			return true
		}
	}
	return false
}
