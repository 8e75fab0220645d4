package karpenter

import "github.com/gpucluster/gpucluster/components/iampolicy"

type (
	policyDocument = iampolicy.Document
	statement      = iampolicy.Statement
)

// controllerPolicy is the Karpenter controller's least privilege for one cluster, following the
// grants of Karpenter v1's reference CloudFormation template (getting-started, cloudformation.yaml):
// launch and tag only what carries this cluster's ownership tags, delete only what Karpenter
// launched, read in this region only. Two additions for EC2NodeClass.placementGroupSelector
// (Karpenter ≥ 1.11): launching into a placement group authorizes the placement-group resource,
// and Karpenter describes placement groups to resolve the selector. The v1.14 template also reads
// instance status (the interruption controller's health checks, Karpenter ≥ 1.12) and the EKS
// cluster's zonal-shift state; TestPolicyCoversEveryAPIKarpenterCalls checks the grants against
// the AWS APIs the pinned controller calls (its pkg/aws/sdk.go).
func controllerPolicy(partition, region, cluster, queueARN, nodeRoleARN string) policyDocument {
	ec2 := func(resource string) string { return "arn:" + partition + ":ec2:" + region + ":*:" + resource }
	owned := "aws:ResourceTag/kubernetes.io/cluster/" + cluster
	requestOwned := "aws:RequestTag/kubernetes.io/cluster/" + cluster
	launched := []string{ec2("fleet/*"), ec2("instance/*"), ec2("volume/*"), ec2("network-interface/*"), ec2("launch-template/*"), ec2("spot-instances-request/*")}
	instanceProfiles := "arn:" + partition + ":iam::*:instance-profile/*"
	return iampolicy.New([]statement{
		{Sid: "AllowScopedEC2InstanceAccessActions", Effect: "Allow", Action: []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource: []string{"arn:" + partition + ":ec2:" + region + "::image/*", "arn:" + partition + ":ec2:" + region + "::snapshot/*",
				ec2("security-group/*"), ec2("subnet/*"), ec2("capacity-reservation/*"), ec2("placement-group/*")}},
		{Sid: "AllowScopedEC2LaunchTemplateAccessActions", Effect: "Allow", Action: []string{"ec2:RunInstances", "ec2:CreateFleet"},
			Resource:  ec2("launch-template/*"),
			Condition: map[string]map[string]any{"StringEquals": {owned: "owned"}, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
		{Sid: "AllowScopedEC2InstanceActionsWithTags", Effect: "Allow", Action: []string{"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"},
			Resource: launched,
			Condition: map[string]map[string]any{
				"StringEquals": {requestOwned: "owned", "aws:RequestTag/eks:eks-cluster-name": cluster},
				"StringLike":   {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
		{Sid: "AllowScopedResourceCreationTagging", Effect: "Allow", Action: []string{"ec2:CreateTags"}, Resource: launched,
			Condition: map[string]map[string]any{
				"StringEquals": {requestOwned: "owned", "aws:RequestTag/eks:eks-cluster-name": cluster,
					"ec2:CreateAction": []string{"RunInstances", "CreateFleet", "CreateLaunchTemplate"}},
				"StringLike": {"aws:RequestTag/karpenter.sh/nodepool": "*"}}},
		{Sid: "AllowScopedResourceTagging", Effect: "Allow", Action: []string{"ec2:CreateTags"}, Resource: ec2("instance/*"),
			Condition: map[string]map[string]any{
				"StringEquals":              {owned: "owned"},
				"StringLike":                {"aws:ResourceTag/karpenter.sh/nodepool": "*"},
				"StringEqualsIfExists":      {"aws:RequestTag/eks:eks-cluster-name": cluster},
				"ForAllValues:StringEquals": {"aws:TagKeys": []string{"eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"}}}},
		{Sid: "AllowScopedDeletion", Effect: "Allow", Action: []string{"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"},
			Resource:  []string{ec2("instance/*"), ec2("launch-template/*")},
			Condition: map[string]map[string]any{"StringEquals": {owned: "owned"}, "StringLike": {"aws:ResourceTag/karpenter.sh/nodepool": "*"}}},
		{Sid: "AllowPassingInstanceRole", Effect: "Allow", Action: []string{"iam:PassRole"}, Resource: nodeRoleARN,
			Condition: map[string]map[string]any{"StringEquals": {"iam:PassedToService": []string{"ec2.amazonaws.com", "ec2.amazonaws.com.cn"}}}},
		{Sid: "AllowScopedInstanceProfileCreationActions", Effect: "Allow", Action: []string{"iam:CreateInstanceProfile"}, Resource: instanceProfiles,
			Condition: map[string]map[string]any{
				"StringEquals": {requestOwned: "owned", "aws:RequestTag/eks:eks-cluster-name": cluster, "aws:RequestTag/topology.kubernetes.io/region": region},
				"StringLike":   {"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
		{Sid: "AllowScopedInstanceProfileTagActions", Effect: "Allow", Action: []string{"iam:TagInstanceProfile"}, Resource: instanceProfiles,
			Condition: map[string]map[string]any{
				"StringEquals": {owned: "owned", "aws:ResourceTag/topology.kubernetes.io/region": region, requestOwned: "owned",
					"aws:RequestTag/eks:eks-cluster-name": cluster, "aws:RequestTag/topology.kubernetes.io/region": region},
				"StringLike": {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*", "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
		{Sid: "AllowScopedInstanceProfileActions", Effect: "Allow",
			Action:   []string{"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"},
			Resource: instanceProfiles,
			Condition: map[string]map[string]any{
				"StringEquals": {owned: "owned", "aws:ResourceTag/topology.kubernetes.io/region": region},
				"StringLike":   {"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"}}},
		{Sid: "AllowInstanceProfileReadActions", Effect: "Allow", Action: []string{"iam:GetInstanceProfile"}, Resource: instanceProfiles},
		{Sid: "AllowUnscopedInstanceProfileListAction", Effect: "Allow", Action: []string{"iam:ListInstanceProfiles"}, Resource: "*"},
		{Sid: "AllowAPIServerEndpointDiscovery", Effect: "Allow", Action: []string{"eks:DescribeCluster"},
			Resource: "arn:" + partition + ":eks:" + region + ":*:cluster/" + cluster},
		{Sid: "AllowInterruptionQueueActions", Effect: "Allow", Action: []string{"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}, Resource: queueARN},
		{Sid: "AllowRegionalReadActions", Effect: "Allow",
			Action: []string{"ec2:DescribeCapacityReservations", "ec2:DescribeImages", "ec2:DescribeInstances", "ec2:DescribeInstanceStatus", "ec2:DescribeInstanceTypeOfferings",
				"ec2:DescribeInstanceTypes", "ec2:DescribeLaunchTemplates", "ec2:DescribePlacementGroups", "ec2:DescribeSecurityGroups",
				"ec2:DescribeSpotPriceHistory", "ec2:DescribeSubnets"},
			Resource:  "*",
			Condition: map[string]map[string]any{"StringEquals": {"aws:RequestedRegion": region}}},
		{Sid: "AllowSSMReadActions", Effect: "Allow", Action: []string{"ssm:GetParameter"},
			Resource: "arn:" + partition + ":ssm:" + region + "::parameter/aws/service/*"},
		{Sid: "AllowPricingReadActions", Effect: "Allow", Action: []string{"pricing:GetProducts"}, Resource: "*"},
		{Sid: "AllowZonalShiftStatusReadOnly", Effect: "Allow", Action: []string{"arc-zonal-shift:GetManagedResource"}, Resource: "*",
			Condition: map[string]map[string]any{"StringLike": {"arc-zonal-shift:ResourceIdentifier": "arn:" + partition + ":eks:" + region + ":*:cluster/" + cluster}}},
	}...)
}

// queuePolicy lets EventBridge deliver to the interruption queue, over TLS only.
func queuePolicy(queueARN string) policyDocument {
	return iampolicy.New([]statement{
		{Sid: "EventBridgeDelivers", Effect: "Allow", Principal: map[string]any{"Service": []string{"events.amazonaws.com", "sqs.amazonaws.com"}},
			Action: []string{"sqs:SendMessage"}, Resource: queueARN},
		{Sid: "DenyHTTP", Effect: "Deny", Principal: "*", Action: []string{"sqs:*"}, Resource: queueARN,
			Condition: map[string]map[string]any{"Bool": {"aws:SecureTransport": "false"}}},
	}...)
}
