// Package destroyorder states what `pulumi destroy` must delete before what, for a derived
// stack: each GPU pool's launcher (managed node group, Karpenter NodePool and EC2NodeClass), the
// system node group, the Karpenter controller and the MPI operator go before everything they use
// while their instances or pods go away (node role, security groups, placement group, the route
// out, the controller's permissions). Otherwise destroy hangs on a group still in use, or leaves
// GPU instances running that nothing may terminate any more. One definition, checked twice: the
// offline tests read the order from the dependency graph the engine recorded, the real-engine
// tests from the order of the doubles' Delete calls.
package destroyorder

import (
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Resource is what a rule looks at: the type token and the logical name.
type Resource struct{ Type, Name string }

// Rule: every resource IsUser matches must be deleted before every resource Need matches, and
// at least one resource must match Need.
type Rule struct {
	IsUser func(Resource) bool
	What   string
	Need   func(Resource) bool
}

func typed(typ string) func(Resource) bool { return func(r Resource) bool { return r.Type == typ } }

func securityGroup(r Resource) bool {
	return strings.HasPrefix(r.Type, "aws:ec2/securityGroup") || strings.HasPrefix(r.Type, "aws:vpc/securityGroup")
}

func systemNodeGroup(r Resource) bool {
	return r.Type == "aws:eks/nodeGroup:NodeGroup" && strings.HasSuffix(r.Name, "-system")
}

// karpenterController is the controller: the Helm chart as the program registers it, and the
// Deployment the chart renders (a child the real provider registers).
func karpenterController(cluster string) func(Resource) bool {
	return func(r Resource) bool {
		return r.Type == "kubernetes:helm.sh/v4:Chart" && r.Name == cluster+"-karpenter" ||
			r.Type == "kubernetes:apps/v1:Deployment" && strings.HasPrefix(r.Name, cluster+"-karpenter:")
	}
}

func controllerPolicy(r Resource) bool {
	return r.Type == "aws:iam/rolePolicy:RolePolicy" && strings.HasSuffix(r.Name, "-controller")
}

// nodeRoleAttachment: a policy attachment of the node role, the managed node groups'
// (<cluster>-node-<policy>) or Karpenter's (<cluster>-karpenter-node-<policy>); another role's
// attachment (the CloudWatch agent's) is no node's.
func nodeRoleAttachment(r Resource, cluster string, karpenter bool) bool {
	prefix := cluster + "-node-"
	if karpenter {
		prefix = cluster + "-karpenter-node-"
	}
	return r.Type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" && strings.HasPrefix(r.Name, prefix)
}

// Rules are the stack's destroy-order rules.
func Rules(spec topology.StackSpec) []Rule {
	cluster := spec.Cluster.Name
	created := spec.VPC.Create
	network := func(r Resource) bool { // what the nodes' and the controller's traffic leaves through
		return r.Type == "aws:ec2/natGateway:NatGateway" || r.Type == "aws:ec2/routeTable:RouteTable" && strings.HasSuffix(r.Name, "-private") ||
			r.Type == "aws:ec2/routeTableAssociation:RouteTableAssociation" && strings.Contains(r.Name, "-private-")
	}
	nodeSG := func(r Resource) bool { // every node's group and its rules
		return securityGroup(r) && (r.Name == cluster+"-node" || strings.HasPrefix(r.Name, cluster+"-node-"))
	}
	var rules []Rule
	add := func(user func(Resource) bool, what string, need func(Resource) bool) {
		rules = append(rules, Rule{IsUser: user, What: what, Need: need})
	}
	for _, pool := range spec.Pools {
		karpenter := pool.Provisioner == topology.ProvisionerKarpenter
		user := func(r Resource) bool {
			if karpenter {
				return (r.Type == "kubernetes:karpenter.sh/v1:NodePool" || r.Type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass") &&
					strings.Contains(r.Name, "-"+pool.Name+"-karpenter")
			}
			return r.Type == "aws:eks/nodeGroup:NodeGroup" && strings.HasSuffix(r.Name, "-"+pool.Name)
		}
		add(user, "node role policy attachment", func(r Resource) bool { return nodeRoleAttachment(r, cluster, karpenter) })
		if pool.Placement.Strategy != topology.PlacementNone {
			add(user, "placement group", func(r Resource) bool {
				return r.Type == "aws:ec2/placementGroup:PlacementGroup" && strings.HasSuffix(r.Name, "-"+pool.Name)
			})
		}
		add(user, "node security group", nodeSG)
		if pool.Network.EFAInterfaces > 0 {
			add(user, "EFA security group", func(r Resource) bool { // the pool's EFA group and its self rules
				return securityGroup(r) && strings.HasPrefix(r.Name, cluster+"-"+pool.Name+"-efa")
			})
		}
		if created {
			add(user, "NAT gateway and private routes", network)
		}
		if karpenter {
			add(user, "Karpenter controller", karpenterController(cluster))
			add(user, "controller policy", controllerPolicy)
			// Draining nodes still authenticate to the API server with the node role until
			// their instances are gone.
			add(user, "Karpenter node role's access entry", func(r Resource) bool {
				return r.Type == "aws:eks/accessEntry:AccessEntry" && strings.HasSuffix(r.Name, "-karpenter-node")
			})
		}
	}
	// The system nodes (CoreDNS, the controllers) keep their role and route until they are gone.
	add(systemNodeGroup, "node role policy attachment", func(r Resource) bool { return nodeRoleAttachment(r, cluster, false) })
	if created {
		add(systemNodeGroup, "NAT gateway and private routes", network)
	}
	// The MPI operator deletes the benchmark pods of the jobs still running: it goes after the
	// system nodes it runs on and the route out of them.
	if spec.Benchmarks.Enabled {
		operator := func(r Resource) bool {
			return r.Type == "kubernetes:apps/v1:Deployment" && strings.HasSuffix(r.Name, "-mpi-operator-controller")
		}
		add(operator, "system node group (where the operator runs)", systemNodeGroup)
		if created {
			add(operator, "NAT gateway and private routes", network)
		}
	}
	// The controller terminates Karpenter's instances: its permissions, identity, queue and route
	// to the EC2 API outlive it.
	for _, pool := range spec.Pools {
		if pool.Provisioner != topology.ProvisionerKarpenter {
			continue
		}
		controller := karpenterController(cluster)
		add(controller, "controller policy", controllerPolicy)
		add(controller, "pod identity association", typed("aws:eks/podIdentityAssociation:PodIdentityAssociation"))
		add(controller, "interruption queue", typed("aws:sqs/queue:Queue"))
		add(controller, "system node group (where the controller runs)", systemNodeGroup)
		if created {
			add(controller, "NAT gateway and private routes", network)
		}
		break
	}
	// The control plane goes before its log group: EKS would write the group anew, unowned.
	if len(spec.Cluster.LogTypes) > 0 {
		controlPlane := func(r Resource) bool { return r.Type == "eks:index:Cluster" || r.Type == "aws:eks/cluster:Cluster" }
		add(controlPlane, "control-plane log group", func(r Resource) bool {
			return r.Type == "aws:cloudwatch/logGroup:LogGroup" && strings.HasSuffix(r.Name, "-control-plane-logs")
		})
	}
	return rules
}
