package k8sargs

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// OperatorArgs configure an operator a stack installs with its benchmarks from the release's
// chart (Kubeflow Trainer, Kueue), with the objects it needs per pool.
type OperatorArgs struct {
	Pools  []topology.PoolSpec
	Labels map[string]string
	// Needs are what the controllers need while jobs are deleted (the system nodes they run on).
	Needs []pulumi.Resource
	// Cluster is the EKS cluster: what is deleted with it need not be deleted first.
	Cluster pulumi.Resource
}

// ChartNamespace creates the namespace an operator's chart installs into: a chart does not
// create it (helm install --create-namespace does, a Chart resource does not).
func ChartNamespace(ctx *pulumi.Context, name, namespace string, labels map[string]string, opts ...pulumi.ResourceOption) (*corev1.Namespace, error) {
	return corev1.NewNamespace(ctx, name+"-namespace", &corev1.NamespaceArgs{Metadata: Metadata(namespace, "", labels)}, opts...)
}

// ComputeDomain is a ComputeDomain object (topology.ComputeDomainSpec) as plain JSON values, in a
// namespace: the pool's own (dradriver) and each benchmark job's (benchjobs).
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
