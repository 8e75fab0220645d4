package k8sargs

import (
	"path"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// OperatorArgs configure an operator a stack installs from the release's chart (Kubeflow Trainer
// and Kueue with its benchmarks, the NVIDIA DRA driver for its UltraServer pools), with the
// objects it needs per pool.
type OperatorArgs struct {
	Pools  []topology.PoolSpec
	Labels map[string]string
	// Needs are what the controllers need while jobs are deleted (the system nodes they run on).
	Needs []pulumi.Resource
	// Cluster is the EKS cluster: what is deleted with it need not be deleted first.
	Cluster pulumi.Resource
}

// ReleaseChart installs an operator release's Helm chart into a namespace of its own, which it
// creates first: a chart does not create its namespace (helm install --create-namespace does, a
// Chart resource does not). The chart follows what the controllers need (args.Needs) and leaves
// to its controllers the Secrets they fill (ControllerFilledSecrets).
//
// Namespace and chart go with the cluster (every child of the chart inherits DeletedWith from it:
// the engine's inheritFromParent), as the custom resources gpucluster makes of its CRDs do.
// Deleting a CRD deletes its objects, and an object with a finalizer — Kueue's resource-in-use on
// a ClusterQueue, a ResourceFlavor, a Topology — goes only when its controller removes it: on
// `pulumi destroy` the controller's Deployment would be deleted beside the CRDs, the CRDs would
// stay Terminating and every delete would wait out its timeout. Nothing outside the cluster
// depends on an operator. With the cluster staying (an `up` that turns the operators off), the
// objects are deleted first, while their controller runs: they depend on the chart.
func ReleaseChart(ctx *pulumi.Context, name, namespace, ref, version string, values pulumi.Map, args OperatorArgs,
	opts ...pulumi.ResourceOption) (*helmv4.Chart, error) {
	if args.Cluster != nil {
		opts = append(opts, pulumi.DeletedWith(args.Cluster))
	}
	ns, err := corev1.NewNamespace(ctx, name+"-namespace", &corev1.NamespaceArgs{Metadata: Metadata(namespace, "", args.Labels)}, opts...)
	if err != nil {
		return nil, err
	}
	// The release is named as the chart, as `helm install` is documented for each (one release
	// per cluster: the cluster's name adds nothing). Named after the Pulumi resource, the cluster
	// name entered every object the chart names from the release, and a cluster name of 20
	// characters or more took the Trainer's Service (<release>-kubeflow-trainer-controller-manager)
	// past the 63 characters a Service name may have; now no rendered name depends on it.
	return helmv4.NewChart(ctx, name, &helmv4.ChartArgs{
		Chart: pulumi.String(ref), Version: pulumi.String(version), Namespace: pulumi.String(namespace), Values: values,
		Name: pulumi.String(ReleaseName(ref)),
	}, append(opts, pulumi.DependsOn(append([]pulumi.Resource{ns}, args.Needs...)),
		pulumi.Transforms([]pulumi.ResourceTransform{ControllerFilledSecrets}))...)
}

// ReleaseName is the Helm release an operator chart is installed as: the chart's own name, the
// last element of its reference.
func ReleaseName(ref string) string { return path.Base(ref) }
