package k8sargs

import (
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
// Chart resource does not). The chart follows what the controllers need (args.Needs).
func ReleaseChart(ctx *pulumi.Context, name, namespace, ref, version string, values pulumi.Map, args OperatorArgs,
	opts ...pulumi.ResourceOption) (*helmv4.Chart, error) {
	ns, err := corev1.NewNamespace(ctx, name+"-namespace", &corev1.NamespaceArgs{Metadata: Metadata(namespace, "", args.Labels)}, opts...)
	if err != nil {
		return nil, err
	}
	return helmv4.NewChart(ctx, name, &helmv4.ChartArgs{
		Chart: pulumi.String(ref), Version: pulumi.String(version), Namespace: pulumi.String(namespace), Values: values,
	}, append(opts, pulumi.DependsOn(append([]pulumi.Resource{ns}, args.Needs...)))...)
}
