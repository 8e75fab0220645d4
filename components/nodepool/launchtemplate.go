package nodepool

import (
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/launchtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// newLaunchTemplate builds the pool's launch template: the derived network interfaces (every one
// with the node and EFA security groups, none with a public IP), the placement group, IMDSv2,
// an encrypted root volume, user data and the capacity reservation. It never names a subnet: a
// managed node group refuses a launch template with SubnetId and chooses the subnet itself.
func newLaunchTemplate(ctx *pulumi.Context, name, base string, spec topology.PoolSpec, group *ec2.PlacementGroup,
	groups pulumi.StringArray, args Args, tags map[string]string, opts ...pulumi.ResourceOption) (*ec2.LaunchTemplate, error) {
	var nics ec2.LaunchTemplateNetworkInterfaceArray
	for _, n := range spec.Network.Interfaces {
		nics = append(nics, ec2.LaunchTemplateNetworkInterfaceArgs{
			NetworkCardIndex:         pulumi.Int(n.NetworkCardIndex),
			DeviceIndex:              pulumi.Int(n.DeviceIndex),
			InterfaceType:            pulumi.String(n.InterfaceType),
			SecurityGroups:           groups,
			AssociatePublicIpAddress: pulumi.String(boolString(n.AssociatePublicIPAddress)),
			DeleteOnTermination:      pulumi.String(boolString(n.DeleteOnTermination)),
		})
	}
	lt := &ec2.LaunchTemplateArgs{
		Name:              pulumi.String(base),
		Description:       pulumi.String(spec.Description),
		NetworkInterfaces: nics,
		MetadataOptions:   launchtemplate.Metadata(),
		// Filled from the spec's storage below.
		BlockDeviceMappings: ec2.LaunchTemplateBlockDeviceMappingArray{},
		TagSpecifications:   launchtemplate.Tags(pulumi.ToStringMap(tags)),
		Tags:                pulumi.ToStringMap(tags),
	}
	for _, v := range spec.Storage.Volumes {
		lt.BlockDeviceMappings = append(lt.BlockDeviceMappings.(ec2.LaunchTemplateBlockDeviceMappingArray), launchtemplate.Volume(v.Device, v.SizeGiB))
	}
	if group != nil {
		lt.Placement = ec2.LaunchTemplatePlacementArgs{GroupName: group.Name}
	}
	if spec.AMI.Family == topology.AMICustom {
		lt.ImageId = pulumi.String(spec.AMI.ID)
	}
	if spec.Capacity.InstanceTypeInLaunchTemplate {
		lt.InstanceType = pulumi.String(spec.Instance.Name)
	}
	switch spec.Capacity.Type {
	case topology.CapacityODCR:
		lt.CapacityReservationSpecification = reservationTarget(spec.Capacity.ReservationID)
	case topology.CapacityCapacityBlock:
		lt.CapacityReservationSpecification = reservationTarget(spec.Capacity.ReservationID)
		lt.InstanceMarketOptions = ec2.LaunchTemplateInstanceMarketOptionsArgs{MarketType: pulumi.String("capacity-block")}
	}
	cluster := Cluster{Name: args.ClusterSettings.Name, ServiceCIDR: args.ClusterSettings.ServiceCIDR}
	if spec.AMI.Family == topology.AMICustom {
		lt.UserData = pulumi.All(args.Endpoint, args.CertificateAuthority).ApplyT(func(v []any) (string, error) {
			c := cluster
			c.Endpoint, c.CertificateAuthority = v[0].(string), v[1].(string)
			return userData(spec, c)
		}).(pulumi.StringOutput)
	} else {
		data, err := userData(spec, cluster)
		if err != nil {
			return nil, err
		}
		lt.UserData = pulumi.String(data)
	}
	return ec2.NewLaunchTemplate(ctx, name, lt, opts...)
}

func reservationTarget(id string) ec2.LaunchTemplateCapacityReservationSpecificationArgs {
	return ec2.LaunchTemplateCapacityReservationSpecificationArgs{
		CapacityReservationTarget: ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs{
			CapacityReservationId: pulumi.String(id),
		},
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
