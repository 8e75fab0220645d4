package cluster

import (
	"encoding/json"
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/ec2"
	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/launchtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// SystemPool is the pool label value of the system node group.
const SystemPool = topology.SystemPool

// systemNodeGroup runs what must not wait for a GPU node: CoreDNS, the Karpenter controller,
// the metrics and load-balancer controllers. It is untainted and shares the node security group.
func systemNodeGroup(ctx *pulumi.Context, name string, s topology.ClusterSettings, c *Cluster, subnets pulumi.StringArrayInput,
	tags pulumi.StringMap, opts ...pulumi.ResourceOption) (*awseks.NodeGroup, error) {
	lt, err := ec2.NewLaunchTemplate(ctx, name+"-system", &ec2.LaunchTemplateArgs{
		Description:         pulumi.String("system nodes of " + s.Name),
		MetadataOptions:     launchtemplate.Metadata(),
		VpcSecurityGroupIds: pulumi.StringArray{c.NodeSecurityGroupID},
		BlockDeviceMappings: ec2.LaunchTemplateBlockDeviceMappingArray{launchtemplate.Volume("/dev/xvda", 50)},
		TagSpecifications:   launchtemplate.Tags(tags),
		Tags:                tags,
	}, opts...)
	if err != nil {
		return nil, err
	}
	return awseks.NewNodeGroup(ctx, name+"-system", &awseks.NodeGroupArgs{
		ClusterName:   c.Name,
		NodeGroupName: pulumi.String(topology.PoolResourceName(s.Name, SystemPool)),
		NodeRoleArn:   c.NodeRoleARN,
		SubnetIds:     subnets,
		AmiType:       pulumi.String("AL2023_x86_64_STANDARD"),
		InstanceTypes: pulumi.StringArray{pulumi.String(s.SystemNodes.InstanceType)},
		CapacityType:  pulumi.String("ON_DEMAND"),
		ScalingConfig: awseks.NodeGroupScalingConfigArgs{
			MinSize: pulumi.Int(s.SystemNodes.Count), MaxSize: pulumi.Int(s.SystemNodes.Count), DesiredSize: pulumi.Int(s.SystemNodes.Count),
		},
		UpdateConfig:   awseks.NodeGroupUpdateConfigArgs{MaxUnavailable: pulumi.Int(1)},
		LaunchTemplate: awseks.NodeGroupLaunchTemplateArgs{Id: lt.ID(), Version: launchtemplate.LatestVersion(lt)},
		Labels:         pulumi.StringMap{topology.LabelPool: pulumi.String(SystemPool)},
		Tags:           tags,
	}, opts...)
}

// kubeconfigField reads one field of the first cluster of a kubeconfig in JSON form.
func kubeconfigField(kubeconfig, field string) (string, error) {
	var kc struct {
		Clusters []struct {
			Cluster map[string]string `json:"cluster"`
		} `json:"clusters"`
	}
	if err := json.Unmarshal([]byte(kubeconfig), &kc); err != nil {
		return "", fmt.Errorf("reading the cluster kubeconfig: %w", err)
	}
	if len(kc.Clusters) == 0 || kc.Clusters[0].Cluster[field] == "" {
		return "", fmt.Errorf("the cluster kubeconfig has no %s", field)
	}
	return kc.Clusters[0].Cluster[field], nil
}

// WithProfile adds the AWS profile to every exec credential of a kubeconfig, as pulumi-eks does
// for its own provider (cluster.js generateKubeconfig: env AWS_PROFILE) but not for the
// kubeconfigJson it exports. Without it, `aws eks get-token` runs with the default credential
// chain while the AWS provider uses aws:profile: another identity, or none.
func WithProfile(kubeconfig, profile string) (string, error) {
	if profile == "" {
		return kubeconfig, nil
	}
	var kc map[string]any
	if err := json.Unmarshal([]byte(kubeconfig), &kc); err != nil {
		return "", fmt.Errorf("reading the cluster kubeconfig: %w", err)
	}
	users, _ := kc["users"].([]any)
	found := false
	for _, u := range users {
		user, _ := u.(map[string]any)["user"].(map[string]any)
		exec, ok := user["exec"].(map[string]any)
		if !ok {
			continue
		}
		env, _ := exec["env"].([]any)
		exec["env"] = append(env, map[string]any{"name": "AWS_PROFILE", "value": profile})
		found = true
	}
	if !found {
		return "", fmt.Errorf("the cluster kubeconfig has no exec credential to give the AWS profile %q", profile)
	}
	b, err := json.Marshal(kc)
	return string(b), err
}
