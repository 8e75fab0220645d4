// Package efacounters deploys the EFA counters reader on the EFA nodes of a benchmark stack: a
// DaemonSet that answers a benchmark job's requests for the node's EFA hardware counters
// (topology.EFACountersReaderScript), which exist only in the host's network namespace.
package efacounters

import (
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Reader is the gpucluster:index:EfaCountersReader component.
type Reader struct {
	pulumi.ResourceState

	Name pulumi.StringOutput `pulumi:"name"` // the DaemonSet's name; "" when no pool records counters
}

// Args configure the reader.
type Args struct {
	Pools  []topology.PoolSpec // every pool of the stack; the reader goes where ReadsEFACounters
	Labels map[string]string   // the stack's ownership and lifecycle labels
}

// New deploys the reader. Its pod has the host's network, because the kernel creates the
// counters only for the host's namespace; it reads them through the host's /sys, read-only,
// and writes only answers into the exchange directory under /run. It runs as root without any
// capability (the directory the kubelet creates is root's), with a read-only root file system.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Reader, error) {
	var pools []topology.PoolSpec
	for _, p := range args.Pools {
		if p.ReadsEFACounters() {
			pools = append(pools, p)
		}
	}
	r := &Reader{}
	props := pulumi.Map{"image": pulumi.String(topology.AL2023Image), "pools": pulumi.ToStringArray(k8sargs.PoolNames(pools))}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:EfaCountersReader", name, props, r, opts...); err != nil {
		return nil, err
	}
	r.Name = pulumi.String("").ToStringOutput()
	if len(pools) > 0 {
		ds, err := appsv1.NewDaemonSet(ctx, name, daemonSet(pools, args.Labels), pulumi.Parent(r))
		if err != nil {
			return nil, err
		}
		r.Name = ds.Metadata.Name().Elem()
	}
	return r, ctx.RegisterResourceOutputs(r, pulumi.Map{"name": r.Name})
}

func daemonSet(pools []topology.PoolSpec, labels map[string]string) *appsv1.DaemonSetArgs {
	name := pulumi.String(topology.EFACountersReader)
	exchange := k8sargs.HostPath("exchange", topology.EFACountersDir)
	exchange.HostPath.(*corev1.HostPathVolumeSourceArgs).Type = pulumi.String("DirectoryOrCreate")
	sys := k8sargs.HostPath("host-sys", "/sys")
	sys.HostPath.(*corev1.HostPathVolumeSourceArgs).Type = pulumi.String("Directory")
	return &appsv1.DaemonSetArgs{
		Metadata: k8sargs.Metadata(topology.EFACountersReader, k8sargs.Namespace, labels),
		Spec: &appsv1.DaemonSetSpecArgs{
			Selector:       &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app.kubernetes.io/name": name}},
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("RollingUpdate")},
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.StringMap{"app.kubernetes.io/name": name}},
				Spec: &corev1.PodSpecArgs{
					AutomountServiceAccountToken: pulumi.Bool(false),
					HostNetwork:                  pulumi.Bool(true),
					SecurityContext:              &corev1.PodSecurityContextArgs{SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")}},
					NodeSelector:                 pulumi.ToStringMap(pools[0].InCluster.EFANodeSelector),
					Affinity:                     k8sargs.OnPools(pools),
					Tolerations:                  k8sargs.Tolerations(pools),
					Containers: corev1.ContainerArray{corev1.ContainerArgs{
						Name: name, Image: pulumi.String(topology.AL2023Image),
						Command: pulumi.ToStringArray([]string{"bash", "-c", topology.EFACountersReaderScript()}),
						Env: corev1.EnvVarArray{corev1.EnvVarArgs{Name: pulumi.String("NODE_NAME"),
							ValueFrom: &corev1.EnvVarSourceArgs{FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("spec.nodeName")}}}},
						SecurityContext: &corev1.SecurityContextArgs{
							AllowPrivilegeEscalation: pulumi.Bool(false),
							Capabilities:             &corev1.CapabilitiesArgs{Drop: pulumi.StringArray{pulumi.String("ALL")}},
							ReadOnlyRootFilesystem:   pulumi.Bool(true),
							RunAsUser:                pulumi.Int(0),
						},
						Resources: &corev1.ResourceRequirementsArgs{
							Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("16Mi")},
							Limits:   pulumi.StringMap{"memory": pulumi.String("64Mi")},
						},
						VolumeMounts: corev1.VolumeMountArray{
							corev1.VolumeMountArgs{Name: pulumi.String("host-sys"), MountPath: pulumi.String(topology.EFACountersHostSys), ReadOnly: pulumi.Bool(true)},
							corev1.VolumeMountArgs{Name: pulumi.String("exchange"), MountPath: pulumi.String(topology.EFACountersDir)},
						},
					}},
					Volumes: corev1.VolumeArray{sys, exchange},
				},
			},
		},
	}
}
