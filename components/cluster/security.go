package cluster

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/vpc"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// securityGroups are the control plane's additional group and the group every node carries.
// gpucluster creates both (instead of reading pulumi-eks's) so that launch templates can name
// the node group by id and every node, system or GPU, shares one group: pods on GPU nodes must
// reach CoreDNS on system nodes.
type securityGroups struct {
	controlPlane, node *ec2.SecurityGroup
	nodeAccess         []pulumi.Resource // the node group and its rules
}

type rule struct {
	name, description string
	ingress           bool
	protocol          string
	from, to          int
	peer              *ec2.SecurityGroup // nil: anywhere (0.0.0.0/0)
	group             *ec2.SecurityGroup
}

func newSecurityGroups(ctx *pulumi.Context, name, clusterName string, vpcID pulumi.StringInput, tags map[string]string,
	opts ...pulumi.ResourceOption) (*securityGroups, error) {
	group := func(suffix, description string, extra map[string]string) (*ec2.SecurityGroup, error) {
		t := map[string]string{"Name": clusterName + "-" + suffix}
		for k, v := range tags {
			t[k] = v
		}
		for k, v := range extra {
			t[k] = v
		}
		return ec2.NewSecurityGroup(ctx, name+"-"+suffix, &ec2.SecurityGroupArgs{
			VpcId: vpcID, Description: pulumi.String(description), Tags: pulumi.ToStringMap(t),
			RevokeRulesOnDelete: pulumi.Bool(true),
		}, opts...)
	}
	cp, err := group("control-plane", "EKS control plane of "+clusterName, nil)
	if err != nil {
		return nil, err
	}
	// Karpenter's EC2NodeClass finds the node group by this tag.
	node, err := group("node", "every node of "+clusterName, map[string]string{topology.TagKarpenterDiscovery: clusterName})
	if err != nil {
		return nil, err
	}
	rules := []rule{
		{"node-from-node", "node to node and pod to pod", true, "-1", 0, 0, node, node},
		{"node-from-control-plane-443", "control plane to webhooks", true, "tcp", 443, 443, cp, node},
		{"node-from-control-plane", "control plane to kubelet and webhooks", true, "tcp", 1025, 65535, cp, node},
		{"node-egress", "nodes reach the internet through NAT and the VPC endpoints", false, "-1", 0, 0, nil, node},
		{"control-plane-from-node", "nodes to the API server", true, "tcp", 443, 443, node, cp},
		{"control-plane-egress", "control plane to nodes", false, "-1", 0, 0, nil, cp},
	}
	sgs := &securityGroups{controlPlane: cp, node: node, nodeAccess: []pulumi.Resource{node}}
	for _, r := range rules {
		res, err := r.create(ctx, name, pulumi.ToStringMap(tags), opts...)
		if err != nil {
			return nil, err
		}
		if r.group == node {
			sgs.nodeAccess = append(sgs.nodeAccess, res)
		}
	}
	return sgs, nil
}

func (r rule) create(ctx *pulumi.Context, name string, tags pulumi.StringMap, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	var from, to pulumi.IntPtrInput
	if r.protocol != "-1" {
		from, to = pulumi.Int(r.from), pulumi.Int(r.to)
	}
	var peer pulumi.StringPtrInput
	var cidr pulumi.StringPtrInput
	if r.peer != nil {
		peer = r.peer.ID()
	} else {
		cidr = pulumi.String("0.0.0.0/0")
	}
	if r.ingress {
		return vpc.NewSecurityGroupIngressRule(ctx, name+"-"+r.name, &vpc.SecurityGroupIngressRuleArgs{
			SecurityGroupId: r.group.ID(), Description: pulumi.String(r.description), IpProtocol: pulumi.String(r.protocol),
			FromPort: from, ToPort: to, ReferencedSecurityGroupId: peer, CidrIpv4: cidr, Tags: tags,
		}, opts...)
	}
	return vpc.NewSecurityGroupEgressRule(ctx, name+"-"+r.name, &vpc.SecurityGroupEgressRuleArgs{
		SecurityGroupId: r.group.ID(), Description: pulumi.String(r.description), IpProtocol: pulumi.String(r.protocol),
		FromPort: from, ToPort: to, ReferencedSecurityGroupId: peer, CidrIpv4: cidr, Tags: tags,
	}, opts...)
}
