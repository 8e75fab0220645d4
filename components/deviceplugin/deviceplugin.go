// Package deviceplugin deploys the NVIDIA and EFA device plugins, which advertise a node's GPUs
// (nvidia.com/gpu) and EFA interfaces (vpc.amazonaws.com/efa) to the kubelet. Which pools get
// which plugin is the topology core's decision (PoolSpec.InCluster).
package deviceplugin

import (
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Pinned images. NVIDIA: the k8s-device-plugin release (nvcr.io). EFA: the EKS-published plugin
// in EKS's regional ECR registry (account 602401143452 serves the commercial regions).
const (
	NVIDIAImage   = "nvcr.io/nvidia/k8s-device-plugin:v0.17.1"
	EFAImageTag   = "v0.5.8"
	efaRegistryID = "602401143452"
)

// EFAImage is the EFA device plugin image for a region.
func EFAImage(region string) string {
	return efaRegistryID + ".dkr.ecr." + region + ".amazonaws.com/eks/aws-efa-k8s-device-plugin:" + EFAImageTag
}

// Plugin is a gpucluster:index:NvidiaDevicePlugin or gpucluster:index:EfaDevicePlugin component.
type Plugin struct {
	pulumi.ResourceState

	Name pulumi.StringOutput `pulumi:"name"` // the DaemonSet's name; "" when no pool needs it
}

// Args configure a plugin.
type Args struct {
	Pools  []topology.PoolSpec // every pool of the stack; the plugin selects those that need it
	Region string
	Labels map[string]string // the stack's ownership and lifecycle labels
}

// NewNVIDIA deploys the NVIDIA device plugin on the pools whose image does not ship one.
func NewNVIDIA(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Plugin, error) {
	pools := selectPools(args.Pools, func(p topology.PoolSpec) bool { return p.InCluster.NVIDIADevicePlugin.Deploy })
	return newPlugin(ctx, "gpucluster:index:NvidiaDevicePlugin", name, "nvidia-device-plugin", NVIDIAImage, pools, nil, args.Labels, opts...)
}

// NewEFA deploys the EFA device plugin on the EFA pools. It tolerates the GPU taint (and every
// pool's taints), which eksctl's copy does not, so it lands on tainted GPU nodes.
func NewEFA(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Plugin, error) {
	pools := selectPools(args.Pools, func(p topology.PoolSpec) bool { return p.InCluster.EFADevicePlugin.Deploy })
	var selector map[string]string // the spec's: every EFA pool selects its EFA nodes alike
	if len(pools) > 0 {
		selector = pools[0].InCluster.EFANodeSelector
	}
	return newPlugin(ctx, "gpucluster:index:EfaDevicePlugin", name, "aws-efa-k8s-device-plugin", EFAImage(args.Region), pools, selector, args.Labels, opts...)
}

func selectPools(pools []topology.PoolSpec, need func(topology.PoolSpec) bool) []topology.PoolSpec {
	var out []topology.PoolSpec
	for _, p := range pools {
		if need(p) {
			out = append(out, p)
		}
	}
	return out
}

func newPlugin(ctx *pulumi.Context, token, name, dsName, image string, pools []topology.PoolSpec, nodeSelector, labels map[string]string,
	opts ...pulumi.ResourceOption) (*Plugin, error) {
	p := &Plugin{}
	props := pulumi.Map{"image": pulumi.String(image), "pools": pulumi.ToStringArray(k8sargs.PoolNames(pools))}
	if err := ctx.RegisterComponentResourceV2(token, name, props, p, opts...); err != nil {
		return nil, err
	}
	p.Name = pulumi.String("").ToStringOutput()
	if len(pools) > 0 {
		ds, err := appsv1.NewDaemonSet(ctx, name, &appsv1.DaemonSetArgs{
			Metadata: k8sargs.Metadata(dsName, k8sargs.Namespace, labels),
			Spec: &appsv1.DaemonSetSpecArgs{
				Selector:       &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(dsName)}},
				UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("RollingUpdate")},
				Template: &corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(dsName)}},
					Spec: &corev1.PodSpecArgs{
						PriorityClassName:            pulumi.String("system-node-critical"),
						AutomountServiceAccountToken: pulumi.Bool(false),
						// The container runtime's default syscall filter: a plugin serves gRPC on a
						// unix socket, watches the kubelet's directory and queries devices (ioctl), all
						// of which it allows.
						SecurityContext: &corev1.PodSecurityContextArgs{
							SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")},
						},
						NodeSelector: pulumi.ToStringMap(nodeSelector),
						Affinity:     k8sargs.OnPools(pools),
						Tolerations:  k8sargs.Tolerations(pools),
						Containers: corev1.ContainerArray{corev1.ContainerArgs{
							Name:  pulumi.String(dsName),
							Image: pulumi.String(image),
							// A device plugin only serves a socket to the kubelet: no privilege needed (as
							// upstream's manifests: NVIDIA's static v0.17.1 DaemonSet, the EKS chart of the
							// EFA plugin). Its only write is that socket, on the mounted kubelet directory,
							// so the root filesystem can be read-only (upstream's other writable mounts, CDI
							// and MPS, serve features gpucluster does not enable).
							SecurityContext: &corev1.SecurityContextArgs{
								AllowPrivilegeEscalation: pulumi.Bool(false),
								Capabilities:             &corev1.CapabilitiesArgs{Drop: pulumi.StringArray{pulumi.String("ALL")}},
								ReadOnlyRootFilesystem:   pulumi.Bool(true),
							},
							Resources: &corev1.ResourceRequirementsArgs{
								Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("20Mi")},
								Limits:   pulumi.StringMap{"memory": pulumi.String("100Mi")},
							},
							VolumeMounts: corev1.VolumeMountArray{corev1.VolumeMountArgs{
								Name: pulumi.String("device-plugins"), MountPath: pulumi.String("/var/lib/kubelet/device-plugins"),
							}},
						}},
						Volumes: corev1.VolumeArray{k8sargs.HostPath("device-plugins", "/var/lib/kubelet/device-plugins")},
					},
				},
			},
		}, pulumi.Parent(p))
		if err != nil {
			return nil, err
		}
		p.Name = ds.Metadata.Name().Elem()
	}
	return p, ctx.RegisterResourceOutputs(p, pulumi.Map{"name": p.Name})
}
