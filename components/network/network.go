// Package network builds the VPC a cluster runs in: a new one for ephemeral clusters (public
// and private subnets in every zone, one NAT gateway, the tags load balancers and Karpenter
// discover subnets by), or an existing VPC whose private subnets it tags for discovery; and the
// VPC's flow logs.
package network

import (
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// The AWS Load Balancer Controller picks subnets by these role tags (Karpenter's discovery tags
// are the core's: topology.TagKarpenterDiscovery, topology.TagZone).
const (
	tagELB         = "kubernetes.io/role/elb"
	tagInternalELB = "kubernetes.io/role/internal-elb"
)

// Args configure a Network.
type Args struct {
	ClusterName string
	Settings    topology.VPCSettings
	// Tags go on every resource (gpucluster's ownership tags).
	Tags map[string]string
}

// Network is the gpucluster:index:Network component.
type Network struct {
	pulumi.ResourceState

	VpcID            pulumi.StringOutput    `pulumi:"vpcId"`
	PrivateSubnetIDs pulumi.StringMapOutput `pulumi:"privateSubnetIds"` // zone → subnet id
	PublicSubnetIDs  pulumi.StringMapOutput `pulumi:"publicSubnetIds"`

	// Egress is the way from the private subnets to AWS's APIs (the NAT gateway, the private route
	// table and its associations): nodes and the Karpenter controller need it until their
	// instances are gone, so they depend on it. Empty for an existing VPC, which gpucluster does
	// not delete.
	Egress []pulumi.Resource

	zones           []string
	private, public map[string]pulumi.StringOutput
}

// New creates or adopts the VPC.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Network, error) {
	n := &Network{zones: args.Settings.AvailabilityZones, private: map[string]pulumi.StringOutput{}}
	props := pulumi.Map{"create": pulumi.Bool(args.Settings.Create), "availabilityZones": pulumi.ToStringArray(args.Settings.AvailabilityZones)}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Network", name, props, n, opts...); err != nil {
		return nil, err
	}
	child := pulumi.Parent(n)
	var err error
	if args.Settings.Create {
		n.public, err = n.create(ctx, name, args, child)
	} else {
		n.public, err = n.adopt(ctx, name, args, child)
	}
	if err != nil {
		return nil, err
	}
	if err := n.flowLogs(ctx, name, args, n.VpcID, child); err != nil {
		return nil, err
	}
	n.PrivateSubnetIDs = toStringMap(n.private)
	n.PublicSubnetIDs = toStringMap(n.public)
	return n, ctx.RegisterResourceOutputs(n, pulumi.Map{
		"vpcId": n.VpcID, "privateSubnetIds": n.PrivateSubnetIDs, "publicSubnetIds": n.PublicSubnetIDs,
	})
}

// PrivateSubnets returns the private subnet ids of the given zones, in order.
func (n *Network) PrivateSubnets(zones []string) (pulumi.StringArray, error) {
	out := pulumi.StringArray{}
	for _, z := range zones {
		id, ok := n.private[z]
		if !ok {
			return nil, fmt.Errorf("zone %s has no private subnet (VPC zones: %v)", z, n.zones)
		}
		out = append(out, id)
	}
	return out, nil
}

// AllPublicSubnets returns every public subnet id, in zone order (an existing VPC may have none).
func (n *Network) AllPublicSubnets() pulumi.StringArray {
	out := pulumi.StringArray{}
	for _, z := range n.zones {
		if id, ok := n.public[z]; ok {
			out = append(out, id)
		}
	}
	return out
}

// AllPrivateSubnets returns every private subnet id, in zone order.
func (n *Network) AllPrivateSubnets() pulumi.StringArray {
	ids, _ := n.PrivateSubnets(n.zones) // every VPC zone has one by construction
	return ids
}

func (n *Network) create(ctx *pulumi.Context, name string, args Args, child pulumi.ResourceOption) (map[string]pulumi.StringOutput, error) {
	s := args.Settings
	privateCIDRs, publicCIDRs, err := subnetPlan(s.CIDR, len(s.AvailabilityZones))
	if err != nil {
		return nil, err
	}
	tags := func(extra map[string]string) pulumi.StringMap { return pulumi.ToStringMap(merge(args.Tags, extra)) }
	clusterTag := "kubernetes.io/cluster/" + args.ClusterName

	vpc, err := ec2.NewVpc(ctx, name, &ec2.VpcArgs{
		CidrBlock: pulumi.String(s.CIDR), EnableDnsHostnames: pulumi.Bool(true), EnableDnsSupport: pulumi.Bool(true),
		Tags: tags(map[string]string{"Name": args.ClusterName}),
	}, child)
	if err != nil {
		return nil, err
	}
	n.VpcID = vpc.ID().ToStringOutput()
	igw, err := ec2.NewInternetGateway(ctx, name, &ec2.InternetGatewayArgs{VpcId: vpc.ID(), Tags: tags(nil)}, child)
	if err != nil {
		return nil, err
	}
	publicRT, err := ec2.NewRouteTable(ctx, name+"-public", &ec2.RouteTableArgs{
		VpcId:  vpc.ID(),
		Routes: ec2.RouteTableRouteArray{ec2.RouteTableRouteArgs{CidrBlock: pulumi.String("0.0.0.0/0"), GatewayId: igw.ID()}},
		Tags:   tags(map[string]string{"Name": args.ClusterName + "-public"}),
	}, child)
	if err != nil {
		return nil, err
	}

	public := map[string]pulumi.StringOutput{}
	var firstPublic *ec2.Subnet
	for i, zone := range s.AvailabilityZones {
		sub, err := ec2.NewSubnet(ctx, fmt.Sprintf("%s-public-%s", name, zone), &ec2.SubnetArgs{
			VpcId: vpc.ID(), CidrBlock: pulumi.String(publicCIDRs[i]), AvailabilityZone: pulumi.String(zone),
			// Only NAT gateways and internet-facing load balancers live here; nodes never do.
			MapPublicIpOnLaunch: pulumi.Bool(false),
			Tags:                tags(map[string]string{"Name": args.ClusterName + "-public-" + zone, tagELB: "1", clusterTag: "shared"}),
		}, child)
		if err != nil {
			return nil, err
		}
		if _, err := ec2.NewRouteTableAssociation(ctx, fmt.Sprintf("%s-public-%s", name, zone), &ec2.RouteTableAssociationArgs{
			SubnetId: sub.ID(), RouteTableId: publicRT.ID(),
		}, child); err != nil {
			return nil, err
		}
		public[zone] = sub.ID().ToStringOutput()
		if firstPublic == nil {
			firstPublic = sub
		}
	}

	// One NAT gateway: ephemeral benchmark clusters pull images through it; a NAT per zone
	// would triple the fixed cost for availability these clusters do not need.
	eip, err := ec2.NewEip(ctx, name+"-nat", &ec2.EipArgs{Domain: pulumi.String("vpc"), Tags: tags(nil)}, child)
	if err != nil {
		return nil, err
	}
	nat, err := ec2.NewNatGateway(ctx, name, &ec2.NatGatewayArgs{
		AllocationId: eip.ID(), SubnetId: firstPublic.ID(), Tags: tags(nil),
	}, child, pulumi.DependsOn([]pulumi.Resource{igw}))
	if err != nil {
		return nil, err
	}
	privateRT, err := ec2.NewRouteTable(ctx, name+"-private", &ec2.RouteTableArgs{
		VpcId:  vpc.ID(),
		Routes: ec2.RouteTableRouteArray{ec2.RouteTableRouteArgs{CidrBlock: pulumi.String("0.0.0.0/0"), NatGatewayId: nat.ID()}},
		Tags:   tags(map[string]string{"Name": args.ClusterName + "-private"}),
	}, child)
	if err != nil {
		return nil, err
	}
	n.Egress = []pulumi.Resource{nat, privateRT}
	for i, zone := range s.AvailabilityZones {
		sub, err := ec2.NewSubnet(ctx, fmt.Sprintf("%s-private-%s", name, zone), &ec2.SubnetArgs{
			VpcId: vpc.ID(), CidrBlock: pulumi.String(privateCIDRs[i]), AvailabilityZone: pulumi.String(zone),
			MapPublicIpOnLaunch: pulumi.Bool(false),
			Tags: tags(map[string]string{"Name": args.ClusterName + "-private-" + zone, tagInternalELB: "1", clusterTag: "shared",
				topology.TagKarpenterDiscovery: args.ClusterName, topology.TagZone: zone}),
		}, child)
		if err != nil {
			return nil, err
		}
		assoc, err := ec2.NewRouteTableAssociation(ctx, fmt.Sprintf("%s-private-%s", name, zone), &ec2.RouteTableAssociationArgs{
			SubnetId: sub.ID(), RouteTableId: privateRT.ID(),
		}, child)
		if err != nil {
			return nil, err
		}
		n.Egress = append(n.Egress, assoc)
		n.private[zone] = sub.ID().ToStringOutput()
	}
	return public, nil
}

// adopt uses an existing VPC. Its private subnets get the discovery tags through ec2.Tag
// resources, which tag a resource gpucluster does not own and remove only their tag on destroy.
func (n *Network) adopt(ctx *pulumi.Context, name string, args Args, child pulumi.ResourceOption) (map[string]pulumi.StringOutput, error) {
	s := args.Settings
	n.VpcID = pulumi.String(s.VPCID).ToStringOutput()
	for _, zone := range s.AvailabilityZones {
		id := s.PrivateSubnets[zone]
		n.private[zone] = pulumi.String(id).ToStringOutput()
		for _, tag := range []struct{ short, key, value string }{
			{"karpenter", topology.TagKarpenterDiscovery, args.ClusterName},
			{"cluster", "kubernetes.io/cluster/" + args.ClusterName, "shared"},
			{"zone", topology.TagZone, zone},
		} {
			key, value := tag.key, tag.value
			if _, err := ec2.NewTag(ctx, fmt.Sprintf("%s-%s-%s", name, zone, tag.short), &ec2.TagArgs{
				ResourceId: pulumi.String(id), Key: pulumi.String(key), Value: pulumi.String(value),
			}, child); err != nil {
				return nil, err
			}
		}
	}
	public := map[string]pulumi.StringOutput{}
	for zone, id := range s.PublicSubnets {
		public[zone] = pulumi.String(id).ToStringOutput()
	}
	return public, nil
}

func toStringMap(m map[string]pulumi.StringOutput) pulumi.StringMapOutput {
	sm := pulumi.StringMap{}
	for k, v := range m {
		sm[k] = v
	}
	return sm.ToStringMapOutput()
}

func merge(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
