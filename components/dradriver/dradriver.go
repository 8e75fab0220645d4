// Package dradriver installs the NVIDIA DRA driver on pools whose NVLink domain spans instances
// (p6e-gb200 UltraServers): the release's Helm chart at a pinned version, with its GPU resources
// off (the NVIDIA device plugin advertises the GPUs) and its ComputeDomains on, whose IMEX
// daemons join a job's nodes into one NVLink domain (EKS user guide, "Use P6e-GB200 UltraServers
// with Amazon EKS"). Its controller runs on the system nodes, its kubelet plugin on those pools'
// nodes only. Each such pool gets the ComputeDomain its training pod template claims from.
package dradriver

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// The pinned release (kubernetes-sigs/dra-driver-nvidia-gpu, formerly NVIDIA/k8s-dra-driver-gpu):
// its chart (deployments/helm/dra-driver-nvidia-gpu) installs the ComputeDomain CRDs, the
// controller, the kubelet plugin and the DeviceClasses; docs/install.md names the registry.
const (
	Version      = "v0.4.1"
	Module       = "sigs.k8s.io/dra-driver-nvidia-gpu"
	ChartRef     = "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu"
	ChartVersion = "0.4.1"
	// Namespace is the chart's own (it refuses the default namespace: allowDefaultNamespace).
	Namespace = "dra-driver-nvidia-gpu"
)

// Args configure the driver.
type Args = k8sargs.OperatorArgs

// Driver is the gpucluster:index:DraDriver component.
type Driver struct {
	pulumi.ResourceState

	Version pulumi.StringOutput      `pulumi:"version"`
	Pools   pulumi.StringArrayOutput `pulumi:"pools"`
}

// Pools are the pools the driver serves: those whose spec asks for it.
func Pools(pools []topology.PoolSpec) []topology.PoolSpec {
	var out []topology.PoolSpec
	for _, p := range pools {
		if p.InCluster.DRADriver.Deploy {
			out = append(out, p)
		}
	}
	return out
}

// Values are the chart values for the pools: GPUs off, ComputeDomains on, the controller on the
// system nodes (the chart's default only prefers control-plane nodes, which EKS does not have), the
// kubelet plugin on the pools' nodes, tolerating their taints and startup taints (its default selects nodes by
// Node Feature Discovery labels, which gpucluster's nodes do not carry). The driver root is the
// host's: the EKS AL2023 NVIDIA image installs the driver on the host.
func Values(pools []topology.PoolSpec) map[string]any {
	var names []any
	for _, p := range pools {
		names = append(names, p.Name)
	}
	// The pools' startup taints too (topology.NodeTolerations): the health gate lifts them
	// without the plugin, and the plugin must be up by the time jobs land.
	var tolerations []any
	for _, t := range topology.NodeTolerations(pools) {
		tolerations = append(tolerations, t.Map())
	}
	return map[string]any{
		"nvidiaDriverRoot": "/",
		"resources":        map[string]any{"gpus": map[string]any{"enabled": false}, "computeDomains": map[string]any{"enabled": true}},
		"controller":       map[string]any{"nodeSelector": map[string]any{topology.LabelPool: topology.SystemPool}},
		"kubeletPlugin": map[string]any{
			"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
				"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{
					map[string]any{"key": topology.LabelPool, "operator": "In", "values": names},
				}}},
			}}},
			"tolerations": tolerations,
		},
	}
}

// ComputeDomain is a ComputeDomain object (topology.ComputeDomainSpec) as plain JSON values, in a
// namespace.
func ComputeDomain(cd topology.ComputeDomainSpec, namespace string, labels map[string]string) map[string]any {
	md := map[string]any{"name": cd.Name, "namespace": namespace}
	if len(labels) > 0 {
		l := map[string]any{}
		for k, v := range labels {
			l[k] = v
		}
		md["labels"] = l
	}
	return map[string]any{
		"apiVersion": topology.ComputeDomainAPIVersion, "kind": topology.ComputeDomainKind, "metadata": md,
		"spec": map[string]any{
			"numNodes": cd.NumNodes,
			"channel":  map[string]any{"resourceClaimTemplate": map[string]any{"name": cd.ClaimTemplate}},
		},
	}
}

// New installs the driver when a pool needs it; nil when none does.
func New(ctx *pulumi.Context, name string, args Args, k8s pulumi.ProviderResource, opts ...pulumi.ResourceOption) (*Driver, error) {
	pools := Pools(args.Pools)
	if len(pools) == 0 {
		return nil, nil
	}
	d := &Driver{}
	names := k8sargs.PoolNames(pools)
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:DraDriver", name,
		pulumi.Map{"version": pulumi.String(Version), "pools": pulumi.ToStringArray(names)}, d, opts...); err != nil {
		return nil, err
	}
	d.Version = pulumi.String(Version).ToStringOutput()
	d.Pools = pulumi.ToStringArray(names).ToStringArrayOutput()
	child := []pulumi.ResourceOption{pulumi.Parent(d), pulumi.Provider(k8s)}
	chart, err := k8sargs.ReleaseChart(ctx, name, Namespace, ChartRef, ChartVersion, pulumi.ToMap(Values(pools)), args, child...)
	if err != nil {
		return nil, err
	}
	for _, p := range pools {
		o := ComputeDomain(*p.TrainingPod.ComputeDomain, topology.BenchmarkNamespace, args.Labels)
		md := o["metadata"].(map[string]any)
		// The controller's finalizer holds a ComputeDomain until its daemons are gone: it goes
		// with the cluster rather than wait on nodes being deleted beside it.
		// Its spec is immutable (the CRD's rule `self == oldSelf`, "A computeDomain.spec is
		// immutable", v0.4.1 crds/resource.nvidia.com_computedomains.yaml): a pool resized
		// (18 to 9 nodes) gets a new one, the old one deleted first since the name is kept
		// (the real API server refused the update in the real-engine tier).
		if _, err := apiextensions.NewCustomResource(ctx, name+"-"+md["name"].(string), &apiextensions.CustomResourceArgs{
			ApiVersion:  pulumi.String(topology.ComputeDomainAPIVersion),
			Kind:        pulumi.String(topology.ComputeDomainKind),
			Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(md["name"].(string)), Namespace: pulumi.String(topology.BenchmarkNamespace), Labels: pulumi.ToStringMap(args.Labels)},
			OtherFields: kubernetes.UntypedArgs{"spec": o["spec"]},
		}, append(child, pulumi.DependsOn([]pulumi.Resource{chart}), pulumi.DeletedWith(args.Cluster),
			pulumi.ReplaceOnChanges([]string{"spec"}), pulumi.DeleteBeforeReplace(true))...); err != nil {
			return nil, err
		}
	}
	return d, ctx.RegisterResourceOutputs(d, pulumi.Map{"version": d.Version, "pools": d.Pools})
}
