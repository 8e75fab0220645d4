package program

import (
	"encoding/json"
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/jsonmap"
	"github.com/gpucluster/gpucluster/components/nodepool"
	"github.com/gpucluster/gpucluster/components/topology"
)

// deployedPools is what this up deploys of each Capacity Block managed node group, recorded in
// the stack output topology.OutputDeployedPools for the next up to compare with.
func deployedPools(spec topology.StackSpec) (map[string]topology.DeployedPool, error) {
	pools := map[string]topology.DeployedPool{}
	for _, p := range spec.Pools {
		if !p.UpdatesOnlyAtZero() {
			continue
		}
		digest, err := nodepool.TemplateDigest(p, spec.Cluster, spec.Tags())
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", p.Name, err)
		}
		pools[p.Name] = topology.DeployedPool{LaunchTemplate: digest, ReservationID: p.Capacity.ReservationID, DesiredNodes: p.Scaling.DesiredNodes}
	}
	return pools, nil
}

// previousPools reads what the stack's last up recorded (topology.OutputDeployedPools) through a
// reference to the stack itself: the engine reads the stack's last saved outputs, which this up
// replaces only when it ends. nil when there are none (a first up, or a stack last deployed
// before the record existed).
func previousPools(ctx *pulumi.Context) (map[string]topology.DeployedPool, error) {
	ref, err := pulumi.NewStackReference(ctx, selfReference(ctx.Organization(), ctx.Project(), ctx.Stack()), &pulumi.StackReferenceArgs{})
	if err != nil {
		return nil, err
	}
	out, err := ref.GetOutputDetails(topology.OutputDeployedPools)
	if err != nil {
		return nil, fmt.Errorf("reading the stack's last %s output: %w", topology.OutputDeployedPools, err)
	}
	v := out.Value
	if v == nil {
		v = out.SecretValue
	}
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var pools map[string]topology.DeployedPool
	if err := json.Unmarshal(b, &pools); err != nil {
		return nil, fmt.Errorf("the stack's last %s output is not what gpucluster records: %w", topology.OutputDeployedPools, err)
	}
	return pools, nil
}

// diyOrganization is the organization a DIY backend (file://, s3://, gs://, azblob://) reports
// for every stack, in its legacy layout as in its project layout (pulumi pkg backend/diy
// state.go: Target.Organization); the Go SDK reports it too when the engine passes none
// (pulumi.Context.Organization).
const diyOrganization = "organization"

// selfReference names the stack in a StackReference to itself, in the form its backend reads as
// this very stack. Pulumi Cloud: org/project/stack, since a bare name takes the user's default
// organization, which need not own the stack (httpstate ParseStackReference). A DIY backend: the
// bare stack name, the one form both layouts read as this stack: the legacy layout (no
// .pulumi/meta.yaml, or version 0) parses the whole reference as a stack name, which has no '/'
// (legacyReferenceStore.ParseReference: tokens.ParseStackName), and the project layout
// (meta.yaml version 1) completes a bare name with "organization" and the current project, the
// one whose Pulumi.yaml runs this program (projectReferenceStore.ParseReference).
func selfReference(org, project, stack string) string {
	if org == "" || org == diyOrganization {
		return stack
	}
	return org + "/" + project + "/" + stack
}

// checkDeployedPools refuses, before anything is created or changed, what the previous up's
// record says this up cannot finish (topology.CapacityBlockChangeProblem), and returns this up's
// record as a stack output value.
func checkDeployedPools(ctx *pulumi.Context, spec topology.StackSpec, previous bool) (pulumi.Output, error) {
	pools, err := deployedPools(spec)
	if err != nil {
		return nil, err
	}
	// Only a stack with Capacity Block pools reads its last up: no other stack needs the
	// reference, and none then depends on the backend resolving it.
	if previous && len(pools) > 0 {
		was, err := previousPools(ctx)
		if err != nil {
			return nil, err
		}
		if err := topology.CapacityBlockChangeProblem(spec, was, pools); err != nil {
			return nil, err
		}
	}
	record := map[string]any{}
	for name, p := range pools {
		if record[name], err = jsonmap.Of(p); err != nil {
			return nil, err
		}
	}
	return pulumi.ToMap(record).ToMapOutput(), nil
}
