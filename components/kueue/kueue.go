// Package kueue installs Kueue, which admits the benchmark and training jobs whole or not at
// all: the release's Helm chart at a pinned version, its controller on the system nodes, with
// the release's own configuration narrowed to gpucluster's jobs (ManagerConfig: the MPIJob and
// TrainJob integrations, the jobs' namespace); and each pool's queue (topology.JobQueue): a ResourceFlavor of
// the pool's nodes, a ClusterQueue whose quota is what those nodes offer, a LocalQueue in the
// jobs' namespace, and, where the pool's nodes carry EC2's network topology, the Topology its
// jobs are packed by.
package kueue

import (
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// The pinned release: its chart (charts/kueue) installs the CRDs, the controller manager with its
// webhooks and its certificate rotator, and the configuration the release ships.
const (
	Version      = "v0.19.2"
	ChartRef     = "oci://registry.k8s.io/kueue/charts/kueue"
	ChartVersion = "0.19.2"
	// Namespace is where the chart's documentation installs it (charts/kueue/README.md), and
	// the namespace its configuration defaults to.
	Namespace = "kueue-system"
)

// Args configure Kueue.
type Args struct {
	k8sargs.OperatorArgs
	// Replicas is the number of controller managers (topology.SystemNodes.KueueReplicas).
	Replicas int
}

// Kueue is the gpucluster:index:Kueue component.
type Kueue struct {
	pulumi.ResourceState

	Version pulumi.StringOutput `pulumi:"version"`
}

// New installs Kueue and the pools' queues.
func New(ctx *pulumi.Context, name string, args Args, k8s pulumi.ProviderResource, opts ...pulumi.ResourceOption) (*Kueue, error) {
	k := &Kueue{}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Kueue", name, pulumi.Map{"version": pulumi.String(Version)}, k, opts...); err != nil {
		return nil, err
	}
	k.Version = pulumi.String(Version).ToStringOutput()
	child := []pulumi.ResourceOption{pulumi.Parent(k), pulumi.Provider(k8s)}
	chart, err := k8sargs.ReleaseChart(ctx, name, Namespace, ChartRef, ChartVersion, pulumi.Map{
		"controllerManager": controllerManagerValues(args.Replicas),
		"managerConfig":     pulumi.Map{"controllerManagerConfigYaml": pulumi.String(ManagerConfig())},
	}, args.OperatorArgs, child...)
	if err != nil {
		return nil, err
	}
	for _, o := range Objects(args.Pools, args.Labels) {
		md := o["metadata"].(map[string]any)
		meta := &metav1.ObjectMetaArgs{Name: pulumi.String(md["name"].(string)), Labels: pulumi.ToStringMap(args.Labels)}
		if ns, ok := md["namespace"].(string); ok {
			meta.Namespace = pulumi.String(ns)
		}
		// Kueue's finalizers hold a ClusterQueue while it has admitted jobs, and a flavor or a
		// topology while a queue uses it: nothing outside the cluster depends on them, so they
		// go with the cluster instead of waiting for jobs applied by hand. They follow the chart,
		// whose CRDs they are and whose webhooks validate them.
		if _, err := apiextensions.NewCustomResource(ctx, name+"-"+strings.ToLower(o["kind"].(string))+"-"+md["name"].(string), &apiextensions.CustomResourceArgs{
			ApiVersion:  pulumi.String(topology.KueueAPIVersion),
			Kind:        pulumi.String(o["kind"].(string)),
			Metadata:    meta,
			OtherFields: kubernetes.UntypedArgs{"spec": o["spec"]},
		}, append(child, pulumi.DependsOn([]pulumi.Resource{chart}), pulumi.DeletedWith(args.Cluster))...); err != nil {
			return nil, err
		}
	}
	return k, ctx.RegisterResourceOutputs(k, pulumi.Map{"version": k.Version})
}

// selectorLabels are the chart's labels of the controller manager's pods, for a release named as
// its chart (k8sargs.ReleaseChart): charts/kueue/templates/_helpers.tpl kueue.selectorLabels.
var selectorLabels = pulumi.StringMap{"app.kubernetes.io/name": pulumi.String("kueue"), "app.kubernetes.io/instance": pulumi.String("kueue"),
	"control-plane": pulumi.String("controller-manager")}

// controllerManagerValues are the chart's controllerManager values: on the system nodes, never on
// a GPU node a job holds; with two replicas, one per system node (a hard spread by hostname: the
// chart sets no anti-affinity) and a PodDisruptionBudget that keeps one while a node is drained,
// both the chart's own keys (charts/kueue/values.yaml v0.19.2: replicas, topologySpreadConstraints,
// podDisruptionBudget.{enabled,minAvailable}).
func controllerManagerValues(replicas int) pulumi.Map {
	v := pulumi.Map{"nodeSelector": pulumi.Map{topology.LabelPool: pulumi.String(topology.SystemPool)}}
	if replicas < 2 {
		return v
	}
	v["replicas"] = pulumi.Int(replicas)
	v["topologySpreadConstraints"] = pulumi.Array{pulumi.Map{"maxSkew": pulumi.Int(1), "topologyKey": pulumi.String(topology.LabelHostname),
		"whenUnsatisfiable": pulumi.String("DoNotSchedule"), "labelSelector": pulumi.Map{"matchLabels": selectorLabels}}}
	v["podDisruptionBudget"] = pulumi.Map{"enabled": pulumi.Bool(true), "minAvailable": pulumi.Int(1)}
	return v
}

// Objects are the pools' queue objects, in the order they can be created: Topologies, flavors
// (the system nodes' first: MPI launchers run there), ClusterQueues, LocalQueues.
func Objects(pools []topology.PoolSpec, labels map[string]string) []map[string]any {
	obj := func(kind, name, namespace string, spec map[string]any) map[string]any {
		md := map[string]any{"name": name}
		if len(labels) > 0 {
			md["labels"] = toAny(labels)
		}
		if namespace != "" {
			md["namespace"] = namespace
		}
		return map[string]any{"apiVersion": topology.KueueAPIVersion, "kind": kind, "metadata": md, "spec": spec}
	}
	var topologies, flavors, clusterQueues, localQueues []map[string]any
	seen := map[string]bool{}
	flavors = append(flavors, obj("ResourceFlavor", topology.SystemFlavor, "", map[string]any{
		"nodeLabels": map[string]any{topology.LabelPool: topology.SystemPool}}))
	for _, p := range pools {
		q := p.Benchmark.Queue
		flavor := map[string]any{"nodeLabels": map[string]any{topology.LabelPool: p.Name}}
		var taints []any
		for _, t := range p.Taints {
			taint := map[string]any{"key": t.Key, "effect": t.Effect}
			if t.Value != "" {
				taint["value"] = t.Value
			}
			taints = append(taints, taint)
		}
		if len(taints) > 0 {
			flavor["nodeTaints"] = taints
		}
		if t := q.Topology; t != nil {
			flavor["topologyName"] = t.Name
			if !seen[t.Name] {
				seen[t.Name] = true
				var levels []any
				for _, l := range t.Levels {
					levels = append(levels, map[string]any{"nodeLabel": l})
				}
				topologies = append(topologies, obj("Topology", t.Name, "", map[string]any{"levels": levels}))
			}
		}
		flavors = append(flavors, obj("ResourceFlavor", q.Flavor, "", flavor))
		clusterQueues = append(clusterQueues, obj("ClusterQueue", q.Name, "", map[string]any{
			// Every namespace may use it; the one LocalQueue pointing at it is in the jobs' namespace.
			"namespaceSelector": map[string]any{},
			// A job that does not fit does not hold up a later one that does.
			"queueingStrategy": "BestEffortFIFO",
			"resourceGroups": []any{map[string]any{
				"coveredResources": toAnySlice(covered(q)),
				"flavors": []any{
					map[string]any{"name": q.Flavor, "resources": quota(covered(q), q.Quota)},
					map[string]any{"name": topology.SystemFlavor, "resources": quota(covered(q), q.SystemQuota)},
				},
			}},
		}))
		localQueues = append(localQueues, obj("LocalQueue", q.Name, topology.BenchmarkNamespace, map[string]any{"clusterQueue": q.Name}))
	}
	return append(append(append(topologies, flavors...), clusterQueues...), localQueues...)
}

// covered are the resources a pool's queue covers, in a fixed order: what its quota names.
func covered(q *topology.JobQueue) []string {
	var out []string
	for _, r := range []string{"cpu", "memory", topology.ResourceGPU, topology.ResourceEFA, topology.ResourceIMEXChannel} {
		if _, ok := q.Quota[r]; ok {
			out = append(out, r)
		}
	}
	return out
}

// quota lists a flavor's nominal quota of each covered resource (0 where it has none).
func quota(resources []string, q map[string]string) []any {
	var out []any
	for _, r := range resources {
		n, ok := q[r]
		if !ok {
			n = "0"
		}
		out = append(out, map[string]any{"name": r, "nominalQuota": n})
	}
	return out
}

func toAnySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func toAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
