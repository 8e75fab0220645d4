// Package nodehealth installs the EKS node monitoring agent, the add-on that reports a node's
// health as node conditions (AcceleratedHardwareReady for GPU XIDs, a missing GPU or a
// fabric-manager failure; KernelReady, NetworkingReady, StorageReady, ContainerRuntimeReady),
// which EKS node auto repair acts on (EKS UG "node-health": the two "are most effective when
// used together"). The topology core decides which pools repair their nodes; the agent goes
// wherever one does.
package nodehealth

import (
	"encoding/json"

	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// AddonName is the EKS add-on of the agent.
const AddonName = "eks-node-monitoring-agent"

// Args configure the agent.
type Args struct {
	ClusterName pulumi.StringInput
	Tags        map[string]string
}

// NodeHealth is the gpucluster:index:NodeHealth component.
type NodeHealth struct {
	pulumi.ResourceState

	AddonName pulumi.StringOutput `pulumi:"addonName"`
}

// configuration is the add-on's configuration: its DCGM server, which runs the GPU diagnostics,
// tolerates every taint, as the agent itself does by default. The chart's default gives it no
// toleration (aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent/values.yaml:
// nodeAgent.tolerations [{operator: Exists}], dcgmAgent.tolerations []), so on gpucluster's GPU
// nodes, every one tainted, the GPU checks would never run. dcgmAgent.tolerations is in the
// add-on's configuration schema (charts/configuration.schema.json).
func configuration() string {
	b, _ := json.Marshal(map[string]any{"dcgmAgent": map[string]any{"tolerations": []any{map[string]any{"operator": "Exists"}}}})
	return string(b)
}

// New installs the agent as an EKS add-on, at the version EKS picks for the cluster.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*NodeHealth, error) {
	h := &NodeHealth{}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:NodeHealth", name, pulumi.Map{"addon": pulumi.String(AddonName)}, h, opts...); err != nil {
		return nil, err
	}
	addon, err := awseks.NewAddon(ctx, name, &awseks.AddonArgs{
		ClusterName: args.ClusterName, AddonName: pulumi.String(AddonName),
		ConfigurationValues: pulumi.String(configuration()), Tags: pulumi.ToStringMap(args.Tags),
	}, pulumi.Parent(h))
	if err != nil {
		return nil, err
	}
	h.AddonName = addon.AddonName
	return h, ctx.RegisterResourceOutputs(h, pulumi.Map{"addonName": h.AddonName})
}
