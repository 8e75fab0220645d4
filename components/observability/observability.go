// Package observability installs the GPU and EFA metrics a stack chooses
// (topology.KeyObservability): NVIDIA's DCGM exporter on every GPU node, or the
// amazon-cloudwatch-observability EKS add-on with its agent's identity through EKS Pod Identity.
package observability

import (
	"encoding/json"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Args configure the metrics.
type Args struct {
	Spec  topology.ObservabilitySpec
	Pools []topology.PoolSpec // the stack's GPU pools, whose nodes the metrics cover
	// ClusterName is the EKS cluster's name (an output: the add-ons are the cluster's).
	ClusterName pulumi.StringInput
	// Cluster is the cluster's name as the stack names it, for the role's name.
	Cluster string
	Tags    map[string]string // AWS tags
	Labels  map[string]string // Kubernetes labels
	// K8s is the provider of the new cluster, for the exporter.
	K8s pulumi.ProviderResource
	// Needs are what the add-on's controllers need to be scheduled and to pull their images: the
	// system nodes, and the NAT egress.
	Needs []pulumi.Resource
	// PodIdentityAgent is the cluster's EKS Pod Identity Agent, which hands the CloudWatch agent
	// its role (nil unless mode is cloudwatch).
	PodIdentityAgent pulumi.Resource
}

// Metrics is the gpucluster:index:Observability component.
type Metrics struct {
	pulumi.ResourceState

	Mode pulumi.StringOutput `pulumi:"mode"`
	// Exporter is the DCGM exporter's DaemonSet ("" unless mode is dcgm-exporter).
	Exporter pulumi.StringOutput `pulumi:"exporter"`
	// AddonVersion is the CloudWatch add-on's version EKS installed ("" unless mode is cloudwatch).
	AddonVersion pulumi.StringOutput `pulumi:"addonVersion"`
	// AgentRoleARN is the CloudWatch agent's role ("" unless mode is cloudwatch).
	AgentRoleARN pulumi.StringOutput `pulumi:"agentRoleArn"`
}

// New installs the stack's metrics; nil when it chose none.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Metrics, error) {
	if !args.Spec.On() {
		return nil, nil
	}
	m := &Metrics{}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Observability", name,
		pulumi.Map{"mode": pulumi.String(args.Spec.Mode), "pools": pulumi.ToStringArray(args.Spec.Pools)}, m, opts...); err != nil {
		return nil, err
	}
	empty := pulumi.String("").ToStringOutput()
	m.Mode, m.Exporter, m.AddonVersion, m.AgentRoleARN = pulumi.String(args.Spec.Mode).ToStringOutput(), empty, empty, empty
	var err error
	switch {
	case args.Spec.DCGMExporter != nil:
		err = m.exporter(ctx, name, args)
	case args.Spec.CloudWatch != nil:
		err = m.cloudWatch(ctx, name, args)
	}
	if err != nil {
		return nil, err
	}
	return m, ctx.RegisterResourceOutputs(m, pulumi.Map{
		"mode": m.Mode, "exporter": m.Exporter, "addonVersion": m.AddonVersion, "agentRoleArn": m.AgentRoleARN})
}

// cloudWatch installs the add-on: its agent's role (CloudWatchAgentServerPolicy, assumed through
// EKS Pod Identity, whose agent the cluster installs), and the CloudWatch add-on with its
// association and configuration. EKS's default add-on version for
// the cluster's Kubernetes version: the versions EKS offers (describe-addon-versions) cannot be
// read from here, and a version string written without reading them could be one EKS refuses;
// the installed version is the component's addonVersion output.
func (m *Metrics) cloudWatch(ctx *pulumi.Context, name string, args Args) error {
	cw := args.Spec.CloudWatch
	child := pulumi.Parent(m)
	tags := pulumi.ToStringMap(args.Tags)
	role, err := iam.NewRole(ctx, name+"-cloudwatch-agent", &iam.RoleArgs{
		Name:             pulumi.String(topology.CloudWatchAgentRole(args.Cluster)),
		AssumeRolePolicy: pulumi.String(iampolicy.PodIdentityTrust().String()),
		Description:      pulumi.String("CloudWatch agent of " + args.Cluster + " (amazon-cloudwatch-observability, through EKS Pod Identity)"),
		Tags:             tags,
	}, child)
	if err != nil {
		return err
	}
	policy, err := iam.NewRolePolicyAttachment(ctx, name+"-cloudwatch-agent-policy", &iam.RolePolicyAttachmentArgs{
		Role: role.Name, PolicyArn: pulumi.String(cw.PolicyARN),
	}, child)
	if err != nil {
		return err
	}
	values, err := json.Marshal(cw.ConfigurationValues)
	if err != nil {
		return err
	}
	addon, err := eks.NewAddon(ctx, name+"-"+cw.AddonName, &eks.AddonArgs{
		ClusterName: args.ClusterName, AddonName: pulumi.String(cw.AddonName), Tags: tags,
		ConfigurationValues: pulumi.String(string(values)),
		PodIdentityAssociations: eks.AddonPodIdentityAssociationArray{eks.AddonPodIdentityAssociationArgs{
			RoleArn: role.Arn, ServiceAccount: pulumi.String(cw.ServiceAccount),
		}},
	}, child, pulumi.DependsOn(append([]pulumi.Resource{args.PodIdentityAgent, policy}, args.Needs...)))
	if err != nil {
		return err
	}
	m.AddonVersion, m.AgentRoleARN = addon.AddonVersion, role.Arn
	return nil
}
