package topology

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// OutputDeployedPools is the stack output in which an up records what it deployed of each
// Capacity Block pool, for the next up to compare with (CapacityBlockChangeProblem).
const OutputDeployedPools = "capacityBlockPools"

// CapacityBlockChangeNote is what a reviewer of a Capacity Block managed pool needs to know
// about changing it (REVIEW.md): CapacityBlockChangeProblem is the rule.
const CapacityBlockChangeNote = "A change to its launch template (the reservation, the image, disks or network interfaces) " +
	"is refused while the pool runs nodes, since EKS cannot replace the nodes of a full block: stop the pool " +
	"(stopped: true) and pulumi up, make the change and pulumi up, then remove stopped and pulumi up"

// UpdatesOnlyAtZero says whether a new launch template for the pool must wait until it runs no
// nodes (CapacityBlockChangeProblem): a managed node group on a Capacity Block.
func (p PoolSpec) UpdatesOnlyAtZero() bool {
	return p.Provisioner == ProvisionerManagedNodeGroup && p.Capacity.Type == CapacityCapacityBlock
}

// DeployedPool is what one up deployed of a Capacity Block pool.
type DeployedPool struct {
	// LaunchTemplate is a digest of every stack-file value the pool's launch template is built
	// from: when it differs, the up makes a new template version and updates the node group to it.
	LaunchTemplate string `json:"launchTemplate"`
	ReservationID  string `json:"reservationId"`
	// DesiredNodes is the node group's desired size as that up set it.
	DesiredNodes int `json:"desiredNodes"`
}

// CapacityBlockChangeProblem refuses, before anything changes, an up that would move a Capacity
// Block managed node group that runs nodes to a new launch template. EKS updates a node group to
// a new template by launching a new node before it drains an old one, and a Capacity Block in use
// has no room for that node, so the update cannot finish; EKS's advice is to set the desired size
// to 0 first (EKS user guide, "Create a managed node group with Capacity Blocks for ML":
// "When upgrading managed node groups with Capacity Blocks, make sure that the desired size of
// the node group is set to 0"). Setting `stopped: true` in the same up is not enough: the
// provider updates a node group's template before its size (terraform-provider-aws
// internal/service/eks/node_group.go, resourceNodeGroupUpdate: "Do any version update first").
//
// deployed is what the previous up recorded (OutputDeployedPools; nil for a stack's first up, or
// one deployed before the record existed), next what this up would deploy.
func CapacityBlockChangeProblem(spec StackSpec, deployed, next map[string]DeployedPool) error {
	var errs ConfigErrors
	for i, p := range spec.Pools {
		was, ok := deployed[p.Name]
		now, here := next[p.Name]
		if !ok || !here || was.DesiredNodes == 0 || was.LaunchTemplate == now.LaunchTemplate {
			continue
		}
		key, line := fmt.Sprintf("%s[%d]", KeyPools, i), 0
		change := "a value its launch template is built from (its image, disks, network interfaces, labels or taints of a custom image, or the stack's tags)"
		if was.ReservationID != now.ReservationID {
			key += ".capacityReservationId"
			line = poolKeyLine(spec.Source, i, "capacityReservationId")
			change = fmt.Sprintf("capacityReservationId %s → %s", was.ReservationID, now.ReservationID)
		}
		if line == 0 {
			line = fileLineOf(spec.Source, fmt.Sprintf("%s[%d]", KeyPools, i))
		}
		errs = append(errs, ConfigError{File: spec.Source, Line: line, Key: key,
			Message: fmt.Sprintf("pool %s runs %d node(s) in its Capacity Block, and this change (%s) gives it a new launch template: "+
				"EKS would replace its nodes one at a time, each after launching a new one, and a Capacity Block in use has no room for it, "+
				"so the update could not finish (EKS user guide, Capacity Blocks for managed node groups: set the desired size to 0 before an update)",
				p.Name, was.DesiredNodes, change),
			Fix: fmt.Sprintf("undo the change; add stopped: true to pool %s and run pulumi up (its nodes and jobs stop); "+
				"then make the change and run pulumi up; then remove stopped and run pulumi up", p.Name)})
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// poolKeyLine is the line of one key of the index-th pool in a stack file; 0 when the file or
// key cannot be read (the value came from an ESC environment).
func poolKeyLine(file string, index int, key string) int {
	pools := MappingValue(fileConfig(file), KeyPools)
	if pools == nil || pools.Kind != yaml.SequenceNode || index >= len(pools.Content) {
		return 0
	}
	return keyLine(pools.Content[index], key)
}
