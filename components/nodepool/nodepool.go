// Package nodepool turns one pool of the derived spec into AWS resources: its cluster
// placement group, its EFA security group, its launch template and, for managed pools, its EKS
// managed node group. Every decision comes from topology.PoolSpec; nothing here knows topology.
package nodepool

import (
	"fmt"
	"github.com/gpucluster/gpucluster/components/jsonmap"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/launchtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Args configure a NodePool.
type Args struct {
	Spec topology.PoolSpec
	// ClusterName carries the dependency on the control plane.
	ClusterName         pulumi.StringOutput
	ClusterSettings     topology.ClusterSettings
	VpcID               pulumi.StringInput
	SubnetIDs           pulumi.StringArrayInput // private subnets in the pool's zones
	NodeSecurityGroupID pulumi.StringInput
	NodeRoleARN         pulumi.StringInput
	// Endpoint and CertificateAuthority are read for custom images only.
	Endpoint             pulumi.StringOutput
	CertificateAuthority pulumi.StringOutput
	Tags                 map[string]string
	// Needs are the resources outside the pool its instances use until they are gone (the node
	// role's policy attachments, the node security group and its rules, the route to AWS's APIs):
	// the node group depends on them, so `pulumi destroy` deletes its instances first.
	Needs []pulumi.Resource
}

// NodePool is the gpucluster:index:NodePool component.
type NodePool struct {
	pulumi.ResourceState

	PlacementGroupName pulumi.StringOutput `pulumi:"placementGroupName"` // "" without a group
	EFASecurityGroupID pulumi.StringOutput `pulumi:"efaSecurityGroupId"` // "" without EFA
	LaunchTemplateID   pulumi.StringOutput `pulumi:"launchTemplateId"`   // "" for Karpenter pools
	NodeGroupName      pulumi.StringOutput `pulumi:"nodeGroupName"`      // "" for Karpenter pools

	// Uses are the pool's own resources its instances use until they are gone: the placement
	// group, the EFA security group and its rules. Whatever launches the instances depends on
	// them (the node group here, a Karpenter NodePool in the program).
	Uses []pulumi.Resource
}

var resourceName = topology.PoolResourceName

// New creates the pool's AWS resources.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*NodePool, error) {
	spec := args.Spec
	np := &NodePool{}
	specInput, err := asInput(spec)
	if err != nil {
		return nil, err
	}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:NodePool", name, pulumi.Map{"spec": specInput}, np, opts...); err != nil {
		return nil, err
	}
	child := pulumi.Parent(np)
	tags := poolTags(spec, args.Tags)
	base := resourceName(args.ClusterSettings.Name, spec.Name)

	np.PlacementGroupName = pulumi.String("").ToStringOutput()
	switch {
	case spec.Placement.Group != "":
		// The group the pool's reservation was made in: named, never created or deleted here.
		np.PlacementGroupName = pulumi.String(spec.Placement.Group).ToStringOutput()
	case spec.Placement.Strategy != topology.PlacementNone:
		pg := &ec2.PlacementGroupArgs{Name: pulumi.String(base), Strategy: pulumi.String(string(spec.Placement.Strategy)), Tags: pulumi.ToStringMap(tags)}
		if spec.Placement.Strategy == topology.PlacementPartition {
			pg.PartitionCount = pulumi.Int(spec.Placement.Partitions)
		}
		group, err := ec2.NewPlacementGroup(ctx, name, pg, child)
		if err != nil {
			return nil, err
		}
		np.PlacementGroupName = group.Name
		np.Uses = append(np.Uses, group)
	}

	np.EFASecurityGroupID = pulumi.String("").ToStringOutput()
	groups := pulumi.StringArray{args.NodeSecurityGroupID}
	if len(spec.Network.EFASecurityGroup) > 0 {
		efa, rules, err := efaSecurityGroup(ctx, name, base, spec.Network.EFASecurityGroup, args.VpcID, tags, child)
		if err != nil {
			return nil, err
		}
		np.Uses = append(append(np.Uses, efa), rules...)
		np.EFASecurityGroupID = efa.ID().ToStringOutput()
		groups = append(groups, efa.ID())
	}

	np.LaunchTemplateID = pulumi.String("").ToStringOutput()
	np.NodeGroupName = pulumi.String("").ToStringOutput()
	if spec.Provisioner == topology.ProvisionerManagedNodeGroup {
		lt, err := newLaunchTemplate(ctx, name, spec, np.PlacementGroupName, groups, args, tags, child)
		if err != nil {
			return nil, err
		}
		needs := append(append([]pulumi.Resource{}, args.Needs...), np.Uses...)
		ng, err := newNodeGroup(ctx, name, base, spec, lt, args, tags, child, pulumi.DependsOn(needs))
		if err != nil {
			return nil, err
		}
		np.LaunchTemplateID = lt.ID().ToStringOutput()
		np.NodeGroupName = ng.NodeGroupName
	}
	return np, ctx.RegisterResourceOutputs(np, pulumi.Map{
		"placementGroupName": np.PlacementGroupName, "efaSecurityGroupId": np.EFASecurityGroupID,
		"launchTemplateId": np.LaunchTemplateID, "nodeGroupName": np.NodeGroupName,
	})
}

// efaSecurityGroup carries the spec's self-referencing rules. The derived rules are all
// ingress-from-self and egress-to-self; any other rule shape is refused rather than guessed.
func efaSecurityGroup(ctx *pulumi.Context, name, base string, rules []topology.SecurityGroupRule, vpcID pulumi.StringInput,
	tags map[string]string, opts ...pulumi.ResourceOption) (*ec2.SecurityGroup, []pulumi.Resource, error) {
	sgTags := map[string]string{"Name": base + "-efa"}
	for k, v := range tags {
		sgTags[k] = v
	}
	sg, err := ec2.NewSecurityGroup(ctx, name+"-efa", &ec2.SecurityGroupArgs{
		VpcId: vpcID, Description: pulumi.String("EFA traffic of " + base + ": all traffic to and from itself"),
		Tags: pulumi.ToStringMap(sgTags), RevokeRulesOnDelete: pulumi.Bool(true),
	}, opts...)
	if err != nil {
		return nil, nil, err
	}
	var created []pulumi.Resource
	for _, r := range rules {
		if !r.Self {
			return nil, nil, fmt.Errorf("EFA rule %+v: only self-referencing rules are supported", r)
		}
		var err error
		var rule *ec2.SecurityGroupRule
		switch r.Direction {
		case "ingress":
			rule, err = ec2.NewSecurityGroupRule(ctx, name+"-efa-ingress-self", &ec2.SecurityGroupRuleArgs{
				SecurityGroupId: sg.ID(), Type: pulumi.String("ingress"), Protocol: pulumi.String(r.Protocol),
				FromPort: pulumi.Int(r.FromPort), ToPort: pulumi.Int(r.ToPort), Self: pulumi.Bool(true), Description: pulumi.String(r.Description),
			}, opts...)
		case "egress":
			rule, err = ec2.NewSecurityGroupRule(ctx, name+"-efa-egress-self", &ec2.SecurityGroupRuleArgs{
				SecurityGroupId: sg.ID(), Type: pulumi.String("egress"), Protocol: pulumi.String(r.Protocol),
				FromPort: pulumi.Int(r.FromPort), ToPort: pulumi.Int(r.ToPort), Self: pulumi.Bool(true), Description: pulumi.String(r.Description),
			}, opts...)
		default:
			err = fmt.Errorf("EFA rule direction %q", r.Direction)
		}
		if err != nil {
			return nil, nil, err
		}
		created = append(created, rule)
	}
	return sg, created, nil
}

func newNodeGroup(ctx *pulumi.Context, name, base string, spec topology.PoolSpec, lt *ec2.LaunchTemplate, args Args,
	tags map[string]string, opts ...pulumi.ResourceOption) (*awseks.NodeGroup, error) {
	capacity := spec.Capacity.NodeGroupType
	var taints awseks.NodeGroupTaintArray
	// Startup taints too: EKS puts a node group's taints on each node when it registers, and the
	// node's initializer lifts its startup taint later (EKS does not put it back).
	for _, t := range append(append([]topology.Taint{}, spec.Taints...), spec.StartupTaints...) {
		taints = append(taints, awseks.NodeGroupTaintArgs{Key: pulumi.String(t.Key), Value: pulumi.String(t.Value), Effect: pulumi.String(TaintEffect[t.Effect])})
	}
	var instanceTypes pulumi.StringArrayInput = pulumi.StringArray{pulumi.String(spec.Instance.Name)}
	if spec.Capacity.InstanceTypeInLaunchTemplate {
		instanceTypes = nil // the launch template names it; EKS refuses both
	}
	var release pulumi.StringPtrInput // "": EKS takes the newest release for the cluster version
	if v := spec.AMI.NodeGroupReleaseVersion; v != "" {
		release = pulumi.StringPtr(v)
	}
	return awseks.NewNodeGroup(ctx, name, &awseks.NodeGroupArgs{
		ReleaseVersion: release,
		ClusterName:    args.ClusterName,
		NodeGroupName:  pulumi.String(base),
		NodeRoleArn:    args.NodeRoleARN,
		SubnetIds:      args.SubnetIDs,
		AmiType:        pulumi.String(spec.AMI.NodeGroupAMIType),
		InstanceTypes:  instanceTypes,
		CapacityType:   pulumi.String(capacity),
		ScalingConfig: awseks.NodeGroupScalingConfigArgs{
			MinSize: pulumi.Int(spec.Scaling.MinNodes), MaxSize: pulumi.Int(spec.Scaling.MaxNodes), DesiredSize: pulumi.Int(spec.Scaling.DesiredNodes),
		},
		// One node at a time: a GPU pool is one training job, and replacing all at once loses it.
		UpdateConfig:   awseks.NodeGroupUpdateConfigArgs{MaxUnavailable: pulumi.Int(1)},
		LaunchTemplate: awseks.NodeGroupLaunchTemplateArgs{Id: lt.ID(), Version: launchtemplate.LatestVersion(lt)},
		Labels:         pulumi.ToStringMap(spec.Labels),
		Taints:         taints,
		Tags:           pulumi.ToStringMap(tags),
		// Only on or off: the thresholds and per-condition actions need pulumi-aws v7.
		NodeRepairConfig: awseks.NodeGroupNodeRepairConfigArgs{Enabled: pulumi.Bool(spec.NodeRepair.Enabled)},
	}, opts...)
}

// poolTags are the tags on every resource of a pool: the stack's and the pool's name.
func poolTags(spec topology.PoolSpec, stackTags map[string]string) map[string]string {
	tags := map[string]string{topology.LabelPool: spec.Name}
	for k, v := range stackTags {
		tags[k] = v
	}
	return tags
}

// TaintEffect maps Kubernetes taint effects to the EKS API's names.
var TaintEffect = map[string]string{"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}

// asInput records the derived spec as the component's input, so state and the offline plan show
// what every pool was derived to.
func asInput(spec topology.PoolSpec) (pulumi.Input, error) {
	m, err := jsonmap.Of(spec)
	return pulumi.ToMap(m), err
}
