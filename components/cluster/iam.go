package cluster

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
)

// NodePolicies are the managed policies of every node role.
var NodePolicies = iampolicy.NodePolicies

// Partition is the ARN partition of a region.
var Partition = iampolicy.Partition

func nodeRole(ctx *pulumi.Context, name, clusterName, region string, tags pulumi.StringMap, opts ...pulumi.ResourceOption) (*iam.Role, []*iam.RolePolicyAttachment, error) {
	role, err := iam.NewRole(ctx, name+"-node", &iam.RoleArgs{
		Name:             pulumi.String(clusterName + "-node"),
		AssumeRolePolicy: pulumi.String(iampolicy.ServiceTrust("ec2.amazonaws.com").String()),
		Description:      pulumi.String("EKS nodes of " + clusterName),
		Tags:             tags,
	}, opts...)
	if err != nil {
		return nil, nil, err
	}
	attachments, err := iampolicy.AttachNodePolicies(ctx, name+"-node", role.Name, Partition(region), opts...)
	return role, attachments, err
}
