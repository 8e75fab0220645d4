// Package program is the gpucluster Pulumi program: it validates a stack file with the topology
// core (every error before any resource is registered), builds the components and exports the
// stack outputs. infra/main.go runs it under the Pulumi CLI; the offline engine runs it in tests.
package program

import (
	"fmt"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/cluster"
	"github.com/gpucluster/gpucluster/components/network"
	"github.com/gpucluster/gpucluster/components/nodepool"
	"github.com/gpucluster/gpucluster/components/podtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Deployment is what Build created, for the exports and for layers built on top.
type Deployment struct {
	Spec         topology.StackSpec
	Network      *network.Network
	Cluster      *cluster.Cluster
	Pools        map[string]*nodepool.NodePool
	PodTemplates map[string]map[string]any
	InCluster    *InCluster
}

// Run returns the program of one stack file.
func Run(stackFile string) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		spec, err := topology.LoadStack(stackFile)
		if err != nil {
			return err
		}
		if spec.Stack != ctx.Stack() {
			return fmt.Errorf("%s holds the config of stack %q, but Pulumi runs stack %q: select the stack with pulumi up -s %s",
				stackFile, spec.Stack, ctx.Stack(), spec.Stack)
		}
		d, err := Build(ctx, spec)
		if err != nil {
			return err
		}
		export(ctx, d)
		return nil
	}
}

// Tag keys gpucluster puts on every AWS resource it creates.
const (
	TagCluster = topology.TagCluster
	TagStack   = topology.TagStack
)

// Build creates every AWS resource of a derived stack.
func Build(ctx *pulumi.Context, spec topology.StackSpec) (*Deployment, error) {
	tags := map[string]string{TagCluster: spec.Cluster.Name, TagStack: spec.Stack}
	d := &Deployment{Spec: spec, Pools: map[string]*nodepool.NodePool{}, PodTemplates: map[string]map[string]any{}}
	var err error
	d.Network, err = network.New(ctx, spec.Cluster.Name, network.Args{ClusterName: spec.Cluster.Name, Settings: spec.VPC, Tags: tags})
	if err != nil {
		return nil, err
	}
	d.Cluster, err = cluster.New(ctx, spec.Cluster.Name, cluster.Args{
		Region: spec.Region, Settings: spec.Cluster, VpcID: d.Network.VpcID,
		PrivateSubnetIDs: d.Network.AllPrivateSubnets(), PublicSubnetIDs: d.Network.AllPublicSubnets(), Tags: tags,
	})
	if err != nil {
		return nil, err
	}
	for _, pool := range spec.Pools {
		subnets, err := d.Network.PrivateSubnets(pool.AvailabilityZones)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", pool.Name, err)
		}
		np, err := nodepool.New(ctx, spec.Cluster.Name+"-"+pool.Name, nodepool.Args{
			Spec: pool, ClusterName: d.Cluster.Name, ClusterSettings: spec.Cluster, VpcID: d.Network.VpcID, SubnetIDs: subnets,
			NodeSecurityGroupID: d.Cluster.NodeSecurityGroupID, NodeRoleARN: d.Cluster.NodeRoleARN,
			Endpoint: d.Cluster.Endpoint, CertificateAuthority: d.Cluster.CertificateAuthority, Tags: tags,
		})
		if err != nil {
			return nil, err
		}
		d.Pools[pool.Name] = np
		if d.PodTemplates[pool.Name], err = podtemplate.AsMap(podtemplate.For(pool, spec.TrainingImage)); err != nil {
			return nil, err
		}
	}
	if d.InCluster, err = buildInCluster(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// export publishes the stack outputs: what a user needs after `pulumi up`.
func export(ctx *pulumi.Context, d *Deployment) {
	nodeGroups, placementGroups := pulumi.StringMap{}, pulumi.StringMap{}
	for name, np := range d.Pools {
		nodeGroups[name] = np.NodeGroupName
		placementGroups[name] = np.PlacementGroupName
	}
	ctx.Export("clusterName", d.Cluster.Name)
	ctx.Export("kubeconfig", d.Cluster.Kubeconfig)
	ctx.Export("vpcId", d.Network.VpcID)
	ctx.Export("systemNodeGroupName", d.Cluster.SystemNodeGroup)
	ctx.Export("nodeGroupNames", nodeGroups)
	ctx.Export("placementGroupNames", placementGroups)
	ctx.Export("trainingPodTemplates", pulumi.ToMap(asAnyMap(d.PodTemplates)))
}

func asAnyMap(m map[string]map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
