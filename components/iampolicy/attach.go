package iampolicy

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// NodePolicies are exactly the AWS managed policies an EKS node needs (EKS user guide, "Amazon
// EKS node IAM role"): join the cluster, pull images from ECR, and let the VPC CNI manage ENIs.
// Nothing else: SSM, CloudWatch or S3 access are workload concerns, granted per pod.
var NodePolicies = []string{"AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly", "AmazonEKS_CNI_Policy"}

// AttachNodePolicies attaches NodePolicies to a node role (managed node groups' and Karpenter's
// alike), one attachment each, named <name>-<policy>.
func AttachNodePolicies(ctx *pulumi.Context, name string, role pulumi.StringInput, partition string, opts ...pulumi.ResourceOption) ([]*iam.RolePolicyAttachment, error) {
	var out []*iam.RolePolicyAttachment
	for _, policy := range NodePolicies {
		a, err := iam.NewRolePolicyAttachment(ctx, name+"-"+policy, &iam.RolePolicyAttachmentArgs{
			Role: role, PolicyArn: pulumi.String("arn:" + partition + ":iam::aws:policy/" + policy),
		}, opts...)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
