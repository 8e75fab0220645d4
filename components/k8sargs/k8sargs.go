// Package k8sargs holds the pulumi-kubernetes argument pieces the in-cluster components share:
// placing a DaemonSet on exactly the pools that need it, with every toleration those pools ask for.
package k8sargs

import (
	"sort"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Namespace is where gpucluster's node agents run (with the other node-critical agents).
const Namespace = "kube-system"

// PoolNames lists the names of the pools, sorted.
func PoolNames(pools []topology.PoolSpec) []string {
	names := make([]string, 0, len(pools))
	for _, p := range pools {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// OnPools is a node affinity that admits the nodes of the given pools only.
func OnPools(pools []topology.PoolSpec) *corev1.AffinityArgs {
	return &corev1.AffinityArgs{NodeAffinity: &corev1.NodeAffinityArgs{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelectorArgs{
			NodeSelectorTerms: corev1.NodeSelectorTermArray{corev1.NodeSelectorTermArgs{
				MatchExpressions: corev1.NodeSelectorRequirementArray{corev1.NodeSelectorRequirementArgs{
					Key: pulumi.String(topology.LabelPool), Operator: pulumi.String("In"), Values: pulumi.ToStringArray(PoolNames(pools)),
				}},
			}},
		},
	}}
}

// Tolerations is the union of the pools' tolerations: each pool's tolerate its own taints (the
// topology core validates that), so the union lands a DaemonSet on all of them.
func Tolerations(pools []topology.PoolSpec) corev1.TolerationArray {
	return TolerationArgs(topology.NodeTolerations(pools))
}

// TolerationArgs are the tolerations as pulumi-kubernetes arguments, each once.
func TolerationArgs(ts []topology.Toleration) corev1.TolerationArray {
	seen := map[topology.Toleration]bool{}
	var out corev1.TolerationArray
	for _, t := range ts {
		if seen[t] {
			continue
		}
		seen[t] = true
		tol := corev1.TolerationArgs{Operator: pulumi.String(t.Operator)}
		if t.Key != "" {
			tol.Key = pulumi.String(t.Key)
		}
		if t.Value != "" {
			tol.Value = pulumi.String(t.Value)
		}
		if t.Effect != "" {
			tol.Effect = pulumi.String(t.Effect)
		}
		out = append(out, tol)
	}
	return out
}

// Metadata names an object and labels it as gpucluster's.
// Merge is a's labels overlaid by b's.
func Merge(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func Metadata(name, namespace string, labels map[string]string) *metav1.ObjectMetaArgs {
	l := map[string]string{"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "gpucluster"}
	for k, v := range labels {
		l[k] = v
	}
	md := &metav1.ObjectMetaArgs{Name: pulumi.String(name), Labels: pulumi.ToStringMap(l)}
	if namespace != "" {
		md.Namespace = pulumi.String(namespace)
	}
	return md
}

// HostPath mounts a host directory.
func HostPath(name, path string) corev1.VolumeArgs {
	return corev1.VolumeArgs{Name: pulumi.String(name), HostPath: &corev1.HostPathVolumeSourceArgs{Path: pulumi.String(path)}}
}

// SkipAwait is pulumi-kubernetes' annotation that a resource is ready once written: its await
// otherwise holds `pulumi up` until a DaemonSet's every pod runs the new template and is Ready
// (provider/pkg/await/daemonset.go, v4.25.0). Each user says why it must not wait.
const SkipAwait = "pulumi.com/skipAwait"

// WithSkipAwait annotates an object with SkipAwait.
func WithSkipAwait(md *metav1.ObjectMetaArgs) *metav1.ObjectMetaArgs {
	md.Annotations = pulumi.StringMap{SkipAwait: pulumi.String("true")}
	return md
}
