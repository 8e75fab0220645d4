// Package launchtemplate holds the launch-template pieces every gpucluster node shares.
package launchtemplate

import (
	"strconv"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Metadata is the core's node metadata options (IMDSv2 only, one hop).
func Metadata() ec2.LaunchTemplateMetadataOptionsArgs {
	m := topology.NodeMetadata
	return ec2.LaunchTemplateMetadataOptionsArgs{
		HttpEndpoint:            pulumi.String(m.HTTPEndpoint),
		HttpTokens:              pulumi.String(m.HTTPTokens),
		HttpPutResponseHopLimit: pulumi.Int(m.HopLimit),
	}
}

// Volume is an encrypted gp3 EBS volume at a device name.
func Volume(device string, sizeGiB int) ec2.LaunchTemplateBlockDeviceMappingArgs {
	return ec2.LaunchTemplateBlockDeviceMappingArgs{
		DeviceName: pulumi.String(device),
		Ebs: ec2.LaunchTemplateBlockDeviceMappingEbsArgs{
			VolumeSize:          pulumi.Int(sizeGiB),
			VolumeType:          pulumi.String("gp3"),
			Encrypted:           pulumi.String("true"),
			DeleteOnTermination: pulumi.String("true"),
		},
	}
}

// Tags propagates tags to the instances, volumes and interfaces a template launches.
func Tags(tags pulumi.StringMap) ec2.LaunchTemplateTagSpecificationArray {
	var out ec2.LaunchTemplateTagSpecificationArray
	for _, resource := range []string{"instance", "volume", "network-interface"} {
		out = append(out, ec2.LaunchTemplateTagSpecificationArgs{ResourceType: pulumi.String(resource), Tags: tags})
	}
	return out
}

// LatestVersion is the template's latest version as the string a node group takes, so that a
// template change rolls the node group.
func LatestVersion(lt *ec2.LaunchTemplate) pulumi.StringOutput {
	return lt.LatestVersion.ApplyT(func(v int) string { return strconv.Itoa(v) }).(pulumi.StringOutput)
}
