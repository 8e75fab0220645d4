package plan

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/cluster"
	"github.com/gpucluster/gpucluster/components/topology"
)

// PulumiEKSChild is one AWS resource pulumi-eks v2.8.1 creates inside its eks:index:Cluster
// component for gpucluster's arguments (skipDefaultNodeGroup, API authentication, EKS's own VPC
// CNI, no OIDC provider). The offline engine cannot run pulumi-eks, so the review lists them from
// this table, which the real-engine tests hold to what the real component creates.
type PulumiEKSChild struct {
	Type string
	// Name is the logical name after "<cluster>-"; a trailing "*" stands for pulumi-eks's hash.
	Name  string
	Count int
	What  string
}

// PulumiEKSChildren are the children every stack gets; AdminEntryChildren come once per
// gpucluster:adminRoleArns entry.
var PulumiEKSChildren = []PulumiEKSChild{
	{"aws:eks/cluster:Cluster", "eksCluster", 1, "the EKS control plane (name, version, subnets, gpucluster's control-plane security group, KMS key, logging, endpoint access)"},
	{"aws:iam/role:Role", "eksRole-role", 1, "the control plane's service role"},
	{"aws:iam/rolePolicyAttachment:RolePolicyAttachment", "eksRole-*", 1, "AmazonEKSClusterPolicy on the service role"},
	{"aws:iam/role:Role", "instanceRole-role", 1, "unused: pulumi-eks's default node role (no instance profile: skipDefaultNodeGroup), created whatever the arguments; passing gpucluster's node role instead would make pulumi-eks add a second access entry for the role EKS already enters for managed node groups"},
	{"aws:iam/rolePolicyAttachment:RolePolicyAttachment", "instanceRole-*", 3, "unused: the worker, CNI and ECR read-only policies on that role"},
	{"aws:eks/accessEntry:AccessEntry", "defaultNodeGroupInstanceRole", 1, "unused: an EC2_LINUX access entry for that role; no instance can carry it without an instance profile someone would have to create"},
	{"aws:ec2/securityGroup:SecurityGroup", "nodeSecurityGroup", 1, "unused: pulumi-eks's node security group (v2.8.1 has no option to skip it); gpucluster's nodes use `<cluster>-node`"},
	{"aws:ec2/securityGroupRule:SecurityGroupRule", "eksNodeIngressRule", 1, "unused: all traffic within that group"},
	{"aws:ec2/securityGroupRule:SecurityGroupRule", "eksNodeClusterIngressRule", 1, "unused: ports 1025-65535 into that group from the control plane"},
	{"aws:ec2/securityGroupRule:SecurityGroupRule", "eksExtApiServerClusterIngressRule", 1, "unused: port 443 into that group from the control plane"},
	{"aws:ec2/securityGroupRule:SecurityGroupRule", "eksNodeInternetEgressRule", 1, "unused: all egress from that group"},
	{"aws:ec2/securityGroupRule:SecurityGroupRule", "eksClusterIngressRule", 1, "on gpucluster's control-plane group: port 443 from pulumi-eks's node group, which has no members; an aws:ec2 rule resource beside gpucluster's aws:vpc rule resources on the same group (the pulumi-aws docs advise one kind per group; the two manage different rules, so neither removes the other's)"},
}

// AdminEntryChildren are pulumi-eks's children for one admin principal (entry key "admin-<i>").
var AdminEntryChildren = []PulumiEKSChild{
	{"aws:eks/accessEntry:AccessEntry", "admin-*", 1, "the admin principal's access entry"},
	{"aws:eks/accessPolicyAssociation:AccessPolicyAssociation", "admin-*", 1, "AmazonEKSClusterAdminPolicy for it, cluster-wide"},
}

// ExpectedPulumiEKSChildren are the children a stack gets.
func ExpectedPulumiEKSChildren(s topology.StackSpec) []PulumiEKSChild {
	out := append([]PulumiEKSChild{}, PulumiEKSChildren...)
	if n := len(s.Cluster.AdminRoleARNs); n > 0 {
		for _, c := range AdminEntryChildren {
			c.Count = n
			out = append(out, c)
		}
	}
	return out
}

// Matches says whether a logical name (with the cluster prefix) is this child's.
func (c PulumiEKSChild) Matches(cluster, name string) bool {
	rest, ok := strings.CutPrefix(name, cluster+"-")
	if !ok {
		return false
	}
	if p, wild := strings.CutSuffix(c.Name, "*"); wild {
		return strings.HasPrefix(rest, p)
	}
	return rest == c.Name
}

// pulumiEKSSection is REVIEW.md's list of what pulumi-eks creates that plan.json cannot show.
func pulumiEKSSection(s topology.StackSpec) string {
	var b strings.Builder
	b.WriteString("## Inside pulumi-eks\n\n`eks:index:Cluster` is a component whose provider creates these AWS resources itself " +
		"(pulumi-eks v2.8.1 with gpucluster's arguments; plan.json cannot show them offline, the real-engine tests check this list). " +
		"Several are unused and cannot be turned off in that version; none grants anything to a running node. " +
		fmt.Sprintf("Each is served by the aws provider its column names: pulumi-eks's released plugin bundles @pulumi/aws %s, which every child asks for, "+
			"except the EKS cluster, which gpucluster has served by the program's own aws provider %s: the cluster's upgrade policy (`upgradePolicy`) is an input of that version's eks.Cluster, not of the bundled one's. "+
			"`pulumi up` installs both plugins.\n\n", cluster.PulumiEKSAWSProviderVersion, cluster.AWSProviderVersion) +
		"| type | name | count | aws provider | what |\n|---|---|---:|---|---|\n")
	for _, c := range ExpectedPulumiEKSChildren(s) {
		fmt.Fprintf(&b, "| `%s` | `%s-%s` | %d | %s | %s |\n", c.Type, s.Cluster.Name, c.Name, c.Count, cluster.PulumiEKSChildAWSProviderVersion(c.Type), c.What)
	}
	b.WriteString("\n")
	return b.String()
}
