package nodepool

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/launchtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// templateInputs are the stack-file values a pool's launch template is built from. newLaunchTemplate
// reads no others (the rest are IDs of resources a stack keeps, and a custom image's cluster
// endpoint and CA), so their digest, TemplateDigest, changes exactly when an up makes a new
// template version, and so updates the node group to it.
type templateInputs struct {
	Name string
	// Description is left out of the digest: newLaunchTemplate ignores changes to it after the
	// template is created, since a new description is a new template version
	// (terraform-provider-aws resourceLaunchTemplateUpdate lists description among the keys that
	// make one) and would roll the node group for nothing.
	Description    string `json:"-"`
	Interfaces     []topology.NetworkInterface
	Volumes        []topology.VolumeSpec
	PlacementGroup bool
	// ReservationGroup is the placement group a reservation was made in, by name (PlacementSpec.Group).
	ReservationGroup string `json:",omitempty"`
	ImageID          string // a custom image's; "" when EKS chooses
	InstanceType     string // "" when the node group names it
	Capacity         topology.CapacityType
	ReservationID    string
	// UserData is the user data; a custom image's is rendered here without the cluster's endpoint
	// and CA, which newLaunchTemplate fills in when the cluster exists.
	UserData string
	Tags     map[string]string
}

func inputsOf(spec topology.PoolSpec, settings topology.ClusterSettings, tags map[string]string) (templateInputs, error) {
	in := templateInputs{Name: resourceName(settings.Name, spec.Name), Interfaces: spec.Network.Interfaces,
		// Not spec.Description, which counts the pool's nodes: the template is the same at any size.
		Description: fmt.Sprintf("gpucluster pool %s: profile %s on %s", spec.Name, spec.Profile, spec.Instance.Name),
		Volumes:     spec.Storage.Volumes, PlacementGroup: spec.Placement.Strategy != topology.PlacementNone, ReservationGroup: spec.Placement.Group,
		Capacity: spec.Capacity.Type, ReservationID: spec.Capacity.ReservationID, Tags: tags}
	if spec.AMI.Family == topology.AMICustom {
		in.ImageID = spec.AMI.ID
	}
	if spec.Capacity.InstanceTypeInLaunchTemplate {
		in.InstanceType = spec.Instance.Name
	}
	var err error
	in.UserData, err = userData(spec, clusterOf(settings))
	return in, err
}

// TemplateDigest is the digest of what a managed pool's launch template is built from
// (topology.DeployedPool.LaunchTemplate); stackTags are the stack's tags, as Args.Tags.
func TemplateDigest(spec topology.PoolSpec, settings topology.ClusterSettings, stackTags map[string]string) (string, error) {
	in, err := inputsOf(spec, settings, poolTags(spec, stackTags))
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

func clusterOf(settings topology.ClusterSettings) Cluster {
	return Cluster{Name: settings.Name, ServiceCIDR: settings.ServiceCIDR}
}

// newLaunchTemplate builds the pool's launch template from its inputs: the derived network
// interfaces (every one with the node and EFA security groups, none with a public IP), the
// placement group, IMDSv2, encrypted volumes, user data and the capacity reservation. It never
// names a subnet: a managed node group refuses a launch template with SubnetId and chooses the
// subnet itself.
func newLaunchTemplate(ctx *pulumi.Context, name string, spec topology.PoolSpec, groupName pulumi.StringOutput,
	groups pulumi.StringArray, args Args, tags map[string]string, opts ...pulumi.ResourceOption) (*ec2.LaunchTemplate, error) {
	in, err := inputsOf(spec, args.ClusterSettings, tags)
	if err != nil {
		return nil, err
	}
	var nics ec2.LaunchTemplateNetworkInterfaceArray
	for _, n := range in.Interfaces {
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
		Name:              pulumi.String(in.Name),
		Description:       pulumi.String(in.Description),
		NetworkInterfaces: nics,
		MetadataOptions:   launchtemplate.Metadata(),
		// Filled from the spec's storage below.
		BlockDeviceMappings: ec2.LaunchTemplateBlockDeviceMappingArray{},
		TagSpecifications:   launchtemplate.Tags(pulumi.ToStringMap(in.Tags)),
		Tags:                pulumi.ToStringMap(in.Tags),
		UserData:            pulumi.String(in.UserData),
	}
	for _, v := range in.Volumes {
		lt.BlockDeviceMappings = append(lt.BlockDeviceMappings.(ec2.LaunchTemplateBlockDeviceMappingArray), launchtemplate.Volume(v.Device, v.SizeGiB))
	}
	if in.PlacementGroup {
		lt.Placement = ec2.LaunchTemplatePlacementArgs{GroupName: groupName}
	}
	if in.ImageID != "" {
		lt.ImageId = pulumi.String(in.ImageID)
	}
	if in.InstanceType != "" {
		lt.InstanceType = pulumi.String(in.InstanceType)
	}
	switch in.Capacity {
	case topology.CapacityODCR:
		lt.CapacityReservationSpecification = reservationTarget(in.ReservationID)
	case topology.CapacityCapacityBlock:
		lt.CapacityReservationSpecification = reservationTarget(in.ReservationID)
		lt.InstanceMarketOptions = ec2.LaunchTemplateInstanceMarketOptionsArgs{MarketType: pulumi.String("capacity-block")}
	}
	if spec.AMI.Family == topology.AMICustom {
		lt.UserData = pulumi.All(args.Endpoint, args.CertificateAuthority).ApplyT(func(v []any) (string, error) {
			c := clusterOf(args.ClusterSettings)
			c.Endpoint, c.CertificateAuthority = v[0].(string), v[1].(string)
			return userData(spec, c)
		}).(pulumi.StringOutput)
	}
	return ec2.NewLaunchTemplate(ctx, name, lt, append(opts, pulumi.IgnoreChanges([]string{"description"}))...)
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
