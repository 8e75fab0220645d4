package program

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/infra/offline"
)

// deletedAfter returns, for a resource, every resource `pulumi destroy` deletes after it: Pulumi
// deletes a resource before each resource it depends on (explicit and property dependencies, as
// the engine recorded them) and a child before its parent, transitively.
func deletedAfter(res []offline.Resource, urn string) map[string]bool {
	byURN := map[string]offline.Resource{}
	for _, r := range res {
		byURN[r.URN] = r
	}
	out := map[string]bool{}
	var visit func(u string)
	visit = func(u string) {
		r := byURN[u]
		next := append([]string{}, r.Dependencies...)
		if r.Parent != "" {
			next = append(next, r.Parent)
		}
		for _, d := range next {
			if !out[d] {
				out[d] = true
				visit(d)
			}
		}
	}
	visit(urn)
	return out
}

// mustOutlive asserts that every resource matching what outlives r during a destroy.
func mustOutlive(t *testing.T, stack string, res []offline.Resource, r offline.Resource, what string, match func(offline.Resource) bool) {
	t.Helper()
	after := deletedAfter(res, r.URN)
	found := false
	for _, x := range res {
		if !match(x) {
			continue
		}
		found = true
		if !after[x.URN] {
			t.Errorf("%s: %s %s may be deleted before %s %s, which needs it until its instances are gone", stack, x.Type, x.Name, r.Type, r.Name)
		}
	}
	if !found {
		t.Errorf("%s: no %s to check against %s", stack, what, r.Name)
	}
}

func typed(typ string) func(offline.Resource) bool {
	return func(r offline.Resource) bool { return r.Type == typ }
}

// What each GPU pool and the Karpenter controller use while their instances go away must be
// deleted after them, in every stack: otherwise `pulumi destroy` hangs on a group or a security
// group still in use, or leaves GPU instances running that nothing may terminate any more.
func TestDestroyOrder(t *testing.T) {
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		stack := filepath.Base(file)
		created := ev.spec.VPC.Create
		network := func(x offline.Resource) bool { // what the nodes' and the controller's traffic leaves through
			return x.Type == "aws:ec2/natGateway:NatGateway" || x.Type == "aws:ec2/routeTable:RouteTable" && strings.HasSuffix(x.Name, "-private") ||
				x.Type == "aws:ec2/routeTableAssociation:RouteTableAssociation" && strings.Contains(x.Name, "-private-")
		}
		for _, pool := range ev.spec.Pools {
			group := func(x offline.Resource) bool {
				return x.Type == "aws:ec2/placementGroup:PlacementGroup" && strings.HasSuffix(x.Name, "-"+pool.Name)
			}
			sg := func(x offline.Resource) bool {
				return strings.HasPrefix(x.Type, "aws:ec2/securityGroup") || strings.HasPrefix(x.Type, "aws:vpc/securityGroup")
			}
			cluster := ev.spec.Cluster.Name
			efa := func(x offline.Resource) bool { // the pool's EFA group and its self rules
				return sg(x) && strings.HasPrefix(x.Name, cluster+"-"+pool.Name+"-efa")
			}
			nodeSG := func(x offline.Resource) bool { // every node's group and its rules
				return sg(x) && (x.Name == cluster+"-node" || strings.HasPrefix(x.Name, cluster+"-node-"))
			}
			var users []offline.Resource
			for _, r := range ev.res {
				switch {
				case r.Type == "aws:eks/nodeGroup:NodeGroup" && strings.HasSuffix(r.Name, "-"+pool.Name):
					users = append(users, r)
				case (r.Type == "kubernetes:karpenter.sh/v1:NodePool" || r.Type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass") &&
					strings.Contains(r.Name, "-"+pool.Name+"-karpenter"):
					users = append(users, r)
				}
			}
			if len(users) == 0 {
				t.Errorf("%s: pool %s has nothing that launches its instances", stack, pool.Name)
			}
			for _, u := range users {
				karpenter := strings.HasPrefix(u.Type, "kubernetes:")
				mustOutlive(t, stack, ev.res, u, "node role policy attachment", func(x offline.Resource) bool {
					// The managed node groups' role: <cluster>-node-<policy>; Karpenter's: <cluster>-karpenter-node-<policy>.
					return x.Type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" && strings.Contains(x.Name, "-karpenter-node-") == karpenter
				})
				if pool.Placement.Strategy != "none" {
					mustOutlive(t, stack, ev.res, u, "placement group", group)
				}
				mustOutlive(t, stack, ev.res, u, "node security group", nodeSG)
				if pool.Network.EFAInterfaces > 0 {
					mustOutlive(t, stack, ev.res, u, "EFA security group", efa)
				}
				if created {
					mustOutlive(t, stack, ev.res, u, "NAT gateway and private routes", network)
				}
				if karpenter {
					mustOutlive(t, stack, ev.res, u, "Karpenter controller", typed("kubernetes:helm.sh/v4:Chart"))
					mustOutlive(t, stack, ev.res, u, "controller policy", func(x offline.Resource) bool {
						return x.Type == "aws:iam/rolePolicy:RolePolicy" && strings.HasSuffix(x.Name, "-controller")
					})
				}
			}
		}
		// The system nodes (CoreDNS, the controller) keep their role and route until they are gone.
		for _, ng := range ev.res {
			if ng.Type == "aws:eks/nodeGroup:NodeGroup" && strings.HasSuffix(ng.Name, "-system") {
				mustOutlive(t, stack, ev.res, ng, "node role policy attachment", func(x offline.Resource) bool {
					return x.Type == "aws:iam/rolePolicyAttachment:RolePolicyAttachment" && !strings.Contains(x.Name, "-karpenter-node-")
				})
				if created {
					mustOutlive(t, stack, ev.res, ng, "NAT gateway and private routes", network)
				}
			}
		}
		// The MPI operator deletes the benchmark pods of the jobs still running: it goes after
		// the system nodes it runs on and the route out of them.
		for _, dep := range ev.ofType("kubernetes:apps/v1:Deployment") {
			if !strings.HasSuffix(dep.Name, "-mpi-operator-controller") {
				continue
			}
			mustOutlive(t, stack, ev.res, dep, "system node group (where the operator runs)", func(x offline.Resource) bool {
				return x.Type == "aws:eks/nodeGroup:NodeGroup" && strings.HasSuffix(x.Name, "-system")
			})
			if created {
				mustOutlive(t, stack, ev.res, dep, "NAT gateway and private routes", network)
			}
		}
		// The controller terminates Karpenter's instances: its permissions, identity, queue and
		// route to the EC2 API outlive it.
		for _, chart := range ev.ofType("kubernetes:helm.sh/v4:Chart") {
			mustOutlive(t, stack, ev.res, chart, "controller policy", func(x offline.Resource) bool {
				return x.Type == "aws:iam/rolePolicy:RolePolicy" && strings.HasSuffix(x.Name, "-controller")
			})
			mustOutlive(t, stack, ev.res, chart, "pod identity association", typed("aws:eks/podIdentityAssociation:PodIdentityAssociation"))
			mustOutlive(t, stack, ev.res, chart, "interruption queue", typed("aws:sqs/queue:Queue"))
			mustOutlive(t, stack, ev.res, chart, "system node group (where the controller runs)", func(x offline.Resource) bool {
				return x.Type == "aws:eks/nodeGroup:NodeGroup" && strings.HasSuffix(x.Name, "-system")
			})
			if created {
				mustOutlive(t, stack, ev.res, chart, "NAT gateway and private routes", network)
			}
		}
	}
}
