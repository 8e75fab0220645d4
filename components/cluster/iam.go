package cluster

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
)

// NodePolicies are exactly the AWS managed policies an EKS node needs (EKS user guide, "Amazon
// EKS node IAM role"): join the cluster, pull images from ECR, and let the VPC CNI manage ENIs.
// Nothing else: SSM, CloudWatch or S3 access are workload concerns, granted per pod.
var NodePolicies = []string{"AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly", "AmazonEKS_CNI_Policy"}

// Partition is the ARN partition of a region.
var Partition = iampolicy.Partition

func nodeRole(ctx *pulumi.Context, name, clusterName, region string, tags pulumi.StringMap, opts ...pulumi.ResourceOption) (*iam.Role, error) {
	role, err := iam.NewRole(ctx, name+"-node", &iam.RoleArgs{
		Name:             pulumi.String(clusterName + "-node"),
		AssumeRolePolicy: pulumi.String(iampolicy.ServiceTrust("ec2.amazonaws.com").String()),
		Description:      pulumi.String("EKS nodes of " + clusterName),
		Tags:             tags,
	}, opts...)
	if err != nil {
		return nil, err
	}
	for _, policy := range NodePolicies {
		if _, err := iam.NewRolePolicyAttachment(ctx, name+"-node-"+policy, &iam.RolePolicyAttachmentArgs{
			Role:      role.Name,
			PolicyArn: pulumi.String("arn:" + Partition(region) + ":iam::aws:policy/" + policy),
		}, opts...); err != nil {
			return nil, err
		}
	}
	return role, nil
}
