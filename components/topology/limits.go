package topology

import (
	"slices"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// AWS limits a stack is checked against before anything is created. Amazon EKS user guide,
// "View and manage Amazon EKS and Fargate service quotas": managed node groups per cluster 30
// and nodes per managed node group 450 are adjustable (a warning naming the quota); public
// endpoint access CIDR ranges per cluster 40 is not (an error).
const (
	QuotaNodeGroupsPerCluster = 30
	QuotaNodesPerNodeGroup    = 450
	maxPublicAccessCIDRs      = 40
)

// Quota names as the Service Quotas console shows them, for warnings a user can act on.
const (
	quotaNameNodeGroups = "Amazon EKS quota \"Managed node groups per cluster\""
	quotaNameNodes      = "Amazon EKS quota \"Nodes per managed node group\""
)

// awsRegions are the regions of pulumi-aws v6.83.4 (sdk/go/aws/pulumiEnums.go, type Region),
// the provider gpucluster deploys with; a test holds this list equal to that file.
var awsRegions = []string{
	"af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1", "ap-south-2",
	"ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5", "ap-southeast-7",
	"ca-central-1", "ca-west-1", "cn-north-1", "cn-northwest-1", "eu-central-1", "eu-central-2", "eu-isoe-west-1",
	"eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1", "me-central-1",
	"me-south-1", "mx-central-1", "sa-east-1", "us-east-1", "us-east-2", "us-gov-east-1", "us-gov-west-1",
	"us-iso-east-1", "us-iso-west-1", "us-isob-east-1", "us-west-1", "us-west-2",
}

// KnownRegion says whether AWS has a region of that name (per awsRegions).
func KnownRegion(name string) bool { return slices.Contains(awsRegions, name) }

// ec2InstanceTypes is every instance type name of the EC2 API (aws-sdk-go-v2 service/ec2
// v1.344.3, types.InstanceType), for the types outside the GPU catalog (system nodes).
var ec2InstanceTypes = ec2types.InstanceType("").Values()

// KnownEC2InstanceType says whether EC2 has an instance type of that name.
func KnownEC2InstanceType(name string) bool {
	return slices.Contains(ec2InstanceTypes, ec2types.InstanceType(name))
}

func ec2InstanceTypeNames() []string {
	out := make([]string, len(ec2InstanceTypes))
	for i, t := range ec2InstanceTypes {
		out[i] = string(t)
	}
	return out
}
