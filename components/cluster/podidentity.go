package cluster

import (
	"fmt"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// podIdentityAgent installs the EKS Pod Identity Agent add-on, after the system nodes its
// DaemonSet first runs on (it tolerates every taint, so it follows every GPU node too:
// aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml). The node role's
// AmazonEKSWorkerNodePolicy grants it eks-auth:AssumeRoleForPodIdentity (EKS user guide,
// pod-id-agent-setup).
//
// It was the Karpenter component's child until the CloudWatch add-on needed it too: the alias
// keeps a Karpenter stack's agent the same resource, where a new URN would make `pulumi up`
// create a second add-on of the same name before deleting the first, which EKS refuses.
func podIdentityAgent(ctx *pulumi.Context, name string, c *Cluster, tags pulumi.StringMap, systemNodes pulumi.Resource) (pulumi.Resource, error) {
	karpenter := pulumi.URN(fmt.Sprintf("urn:pulumi:%s::%s::gpucluster:index:Karpenter::%s-karpenter", ctx.Stack(), ctx.Project(), name))
	return awseks.NewAddon(ctx, name+"-pod-identity-agent", &awseks.AddonArgs{
		ClusterName: c.Name, AddonName: pulumi.String(topology.PodIdentityAgentAddon), Tags: tags,
	}, pulumi.Parent(c), pulumi.DependsOn([]pulumi.Resource{systemNodes}),
		pulumi.Aliases([]pulumi.Alias{{Name: pulumi.String(name + "-karpenter-pod-identity-agent"), ParentURN: karpenter}}))
}
