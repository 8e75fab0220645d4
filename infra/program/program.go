// Package program is the gpucluster Pulumi program: it validates the stack's configuration with
// the topology core (every error before any resource is registered), builds the components and
// exports the stack outputs. infra/main.go runs RunEngine under the Pulumi CLI (the engine's
// configuration); the offline commands and tests run Run (the stack file's).
package program

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/cluster"
	"github.com/gpucluster/gpucluster/components/expiry"
	"github.com/gpucluster/gpucluster/components/network"
	"github.com/gpucluster/gpucluster/components/nodehealth"
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
	// BenchmarkJobs are each pool's benchmark objects as one v1 List (kubectl apply -f -).
	BenchmarkJobs map[string]map[string]any
	InCluster     *InCluster
}

// Run returns the program of one stack file as the offline commands evaluate it on the instant
// at: the configuration is the file's (the offline engine has no other).
func Run(stackFile string, at time.Time) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		spec, err := topology.LoadStack(stackFile, at)
		if err != nil {
			return err
		}
		return deploy(ctx, spec, false, false)
	}
}

// RunSpec returns the program of a stack already loaded and derived (the offline plan, which
// reviews the same spec it evaluates).
func RunSpec(spec topology.StackSpec) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error { return deploy(ctx, spec, false, false) }
}

// RunEngine returns the program as `pulumi up` runs it: the configuration is what the engine
// passes (the stack file merged with its ESC environments, secrets decrypted, any other source);
// the stack file only places errors on lines. Secret configuration makes every export secret.
//
// clock is read once per run, and that instant judges the whole stack (topology.DeriveStack):
// its support window, its cost guard and its expiry (topology.StackSpec.AtTime: after the expiry
// the pools stay at zero; before it they are what the stack says). infra/main.go passes the wall
// clock; nothing in the program reads it.
func RunEngine(stackFile string, clock func() time.Time) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		at := clock()
		data, err := os.ReadFile(stackFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		st, err := topology.ParseEngineConfig(stackFile, data, engineConfig(ctx, data))
		if err != nil {
			return err
		}
		spec, err := topology.DeriveStack(st, at)
		if err != nil {
			return err
		}
		return deploy(ctx, spec.AtTime(at), len(st.Secrets) > 0, true)
	}
}

// engineConfig reads from the engine every key gpucluster reads, every key the file names (so
// that a typo there is still reported) and every key the engine announces.
func engineConfig(ctx *pulumi.Context, fileData []byte) topology.EngineConfig {
	keys := append(topology.ConfigKeys(), topology.KeyRegion)
	var file struct {
		Config map[string]any `yaml:"config"`
	}
	if yaml.Unmarshal(fileData, &file) == nil {
		for k := range file.Config {
			keys = append(keys, k)
		}
	}
	var announced map[string]string
	if json.Unmarshal([]byte(os.Getenv(pulumi.EnvConfig)), &announced) == nil {
		for k := range announced {
			keys = append(keys, k)
		}
	}
	ec := topology.EngineConfig{Values: map[string]string{}}
	for _, k := range keys {
		if v, ok := ctx.GetConfig(k); ok {
			ec.Values[k] = v
			if ctx.IsConfigSecret(k) && !slices.Contains(ec.Secrets, k) {
				ec.Secrets = append(ec.Secrets, k)
			}
		}
	}
	return ec
}

// checkAdmins refuses, before anything is created, an admin entry for the identity running the
// program (topology.CreatorAdminProblem). Only the engine knows that identity: it is asked once.
func checkAdmins(ctx *pulumi.Context, spec topology.StackSpec) error {
	if len(spec.Cluster.AdminRoleARNs) == 0 {
		return nil
	}
	var caller struct {
		Arn string `pulumi:"arn"`
	}
	if err := ctx.Invoke("aws:index/getCallerIdentity:getCallerIdentity", struct{}{}, &caller); err != nil {
		return fmt.Errorf("reading the identity running pulumi, to check %s: %w", topology.KeyAdminRoleARNs, err)
	}
	return topology.CreatorAdminProblem(spec, caller.Arn)
}

// awsProfile is the stack's aws:profile, as the engine passes it ("" offline without one).
func awsProfile(ctx *pulumi.Context) string {
	p, _ := ctx.GetConfig("aws:profile")
	return p
}

// exported receives the stack outputs; tests read them here (Pulumi's mocks do not pass them on).
var exported = func(map[string]pulumi.Output) {}

// deploy builds a derived stack and exports its outputs. running: the engine runs the program
// against a stack that may already exist, whose last up the change is checked against (the
// offline engine has no stack).
func deploy(ctx *pulumi.Context, spec topology.StackSpec, secret, running bool) error {
	if spec.Stack != ctx.Stack() {
		return fmt.Errorf("%s holds the config of stack %q, but Pulumi runs stack %q: select the stack with pulumi up -s %s",
			spec.Source, spec.Stack, ctx.Stack(), spec.Stack)
	}
	record, err := checkDeployedPools(ctx, spec, running)
	if err != nil {
		return err
	}
	d, err := Build(ctx, spec)
	if err != nil {
		return err
	}
	outs := outputs(d, record, secret)
	for _, k := range slices.Sorted(maps.Keys(outs)) {
		ctx.Export(k, outs[k])
	}
	exported(outs)
	return nil
}

// Tag keys gpucluster puts on every AWS resource it creates.
const (
	TagCluster = topology.TagCluster
	TagStack   = topology.TagStack
)

// Build creates every AWS resource of a derived stack.
func Build(ctx *pulumi.Context, spec topology.StackSpec) (*Deployment, error) {
	if err := checkAdmins(ctx, spec); err != nil {
		return nil, err
	}
	tags := spec.Tags()
	d := &Deployment{Spec: spec, Pools: map[string]*nodepool.NodePool{}, PodTemplates: map[string]map[string]any{},
		BenchmarkJobs: map[string]map[string]any{}}
	var err error
	d.Network, err = network.New(ctx, spec.Cluster.Name, network.Args{ClusterName: spec.Cluster.Name, Settings: spec.VPC, Tags: tags})
	if err != nil {
		return nil, err
	}
	d.Cluster, err = cluster.New(ctx, spec.Cluster.Name, cluster.Args{
		Region: spec.Region, Settings: spec.Cluster, VpcID: d.Network.VpcID,
		PrivateSubnetIDs: d.Network.AllPrivateSubnets(), PublicSubnetIDs: d.Network.AllPublicSubnets(), Tags: tags,
		AWSProfile: awsProfile(ctx), Needs: d.Network.Egress, PodIdentityAgent: spec.NeedsPodIdentityAgent(),
	})
	if err != nil {
		return nil, err
	}
	for _, pool := range spec.Pools {
		subnets, err := d.Network.PrivateSubnets(pool.AvailabilityZones)
		if err != nil {
			return nil, fmt.Errorf("pool %s: %w", pool.Name, err)
		}
		if pool.Network.SingleSubnet && len(subnets) != 1 {
			return nil, fmt.Errorf("pool %s: EFA traffic stays in one subnet, but the pool has %d", pool.Name, len(subnets))
		}
		np, err := nodepool.New(ctx, topology.PoolResourceName(spec.Cluster.Name, pool.Name), nodepool.Args{
			Spec: pool, ClusterName: d.Cluster.Name, ClusterSettings: spec.Cluster, VpcID: d.Network.VpcID, SubnetIDs: subnets,
			NodeSecurityGroupID: d.Cluster.NodeSecurityGroupID, NodeRoleARN: d.Cluster.NodeRoleARN,
			Endpoint: d.Cluster.Endpoint, CertificateAuthority: d.Cluster.CertificateAuthority, Tags: tags,
			Needs: append(append([]pulumi.Resource{}, d.Cluster.NodeAccess...), d.Network.Egress...),
		})
		if err != nil {
			return nil, err
		}
		d.Pools[pool.Name] = np
		if d.PodTemplates[pool.Name], err = podtemplate.AsMap(podtemplate.For(pool, spec.TrainingImage, spec.Labels())); err != nil {
			return nil, err
		}
		if objs, err := benchjobs.Objects(spec, pool); err != nil {
			return nil, err
		} else if objs != nil {
			d.BenchmarkJobs[pool.Name] = benchjobs.List(objs)
		}
	}
	if spec.NodeRepairAnywhere() {
		if _, err := nodehealth.New(ctx, spec.Cluster.Name+"-node-health", nodehealth.Args{ClusterName: d.Cluster.Name, Tags: tags}); err != nil {
			return nil, err
		}
	}
	if d.InCluster, err = buildInCluster(ctx, d); err != nil {
		return nil, err
	}
	if err := buildExpiry(ctx, d); err != nil {
		return nil, err
	}
	return d, nil
}

// buildExpiry stops every GPU pool at the stack's expiry: managed node groups by schedule, and
// Karpenter NodePools by an in-cluster job.
func buildExpiry(ctx *pulumi.Context, d *Deployment) error {
	spec := d.Spec
	at := spec.ExpiresAt()
	if at.IsZero() {
		return nil
	}
	args := expiry.Args{At: at, Cluster: spec.Cluster.Name, Region: spec.Region, K8s: d.InCluster.Provider, Tags: spec.ExpiryTags(), Labels: spec.ExpiryLabels(),
		KubectlImage: topology.KubectlImage(spec.Cluster.KubernetesVersion)}
	for _, p := range spec.Pools {
		if p.Provisioner == topology.ProvisionerKarpenter {
			args.NodePools = append(args.NodePools, topology.PoolResourceName(spec.Cluster.Name, p.Name))
			continue
		}
		args.NodeGroups = append(args.NodeGroups, expiry.NodeGroup{Pool: p.Name, Name: d.Pools[p.Name].NodeGroupName, MaxNodes: p.Scaling.MaxNodes})
	}
	_, err := expiry.New(ctx, spec.Cluster.Name+"-expiry", args)
	return err
}

// outputs are the stack outputs: what a user needs after `pulumi up`. With secret
// configuration every one is secret: each is derived from the configuration.
func outputs(d *Deployment, deployedPools pulumi.Output, secret bool) map[string]pulumi.Output {
	nodeGroups, placementGroups := pulumi.StringMap{}, pulumi.StringMap{}
	for name, np := range d.Pools {
		nodeGroups[name] = np.NodeGroupName
		placementGroups[name] = np.PlacementGroupName
	}
	outs := map[string]pulumi.Output{
		"clusterName":                d.Cluster.Name,
		"kubeconfig":                 d.Cluster.Kubeconfig,
		"vpcId":                      d.Network.VpcID,
		"systemNodeGroupName":        d.Cluster.SystemNodeGroup,
		"nodeGroupNames":             nodeGroups.ToStringMapOutput(),
		"placementGroupNames":        placementGroups.ToStringMapOutput(),
		"trainingPodTemplates":       pulumi.ToMap(asAnyMap(d.PodTemplates)).ToMapOutput(),
		"benchmarkJobs":              pulumi.ToMap(asAnyMap(d.BenchmarkJobs)).ToMapOutput(),
		topology.OutputDeployedPools: deployedPools,
	}
	if secret {
		for k, v := range outs {
			outs[k] = pulumi.ToSecret(v)
		}
	}
	return outs
}

func asAnyMap(m map[string]map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
