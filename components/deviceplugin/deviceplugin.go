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

// Pinned images. NVIDIA: the k8s-device-plugin release (nvcr.io), v0.20.0 as eksctl ships it;
// since v0.17.1: XID health checks that may be enabled explicitly (v0.18.0), health checks that
// no longer fail on older devices (v0.19.0), Rubin support (v0.20.0) (NVIDIA/k8s-device-plugin
// CHANGELOG.md). EFA: the plugin of aws/eks-charts chart stable/aws-efa-k8s-device-plugin v0.5.32
// (eks-charts #1366, 2026-09-10: "bump aws-efa-k8s-device-plugin to v0.5.21-eksbuild.13"; since
// v0.5.21 the EKS build number is part of the tag, eks-charts #1363), in the region's EKS image
// registry (topology.EKSImageRegistry: account and domain differ by region). #1363 and #1366
// describe only the image's bump (the chart's files past v0.5.30 are not readable here); the
// plugin's own source is not public, and its v0.5.21 logs in klog's format (#1363's test output),
// which nothing of gpucluster reads.
const (
	NVIDIAImage = "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
	EFAImageTag = "v0.5.21-eksbuild.13"
)

// The DaemonSets' names, which are also their pods' app.kubernetes.io/name label (in
// k8sargs.Namespace): how `gpucluster verify` finds a node's plugin pods.
const (
	NVIDIAName = "nvidia-device-plugin"
	EFAName    = "aws-efa-k8s-device-plugin"
)

// EFAImage is the EFA device plugin image for a region.
func EFAImage(region string) string {
	return topology.EKSImageRegistry(region) + "/eks/aws-efa-k8s-device-plugin:" + EFAImageTag
}

// pod is what differs between the plugins' pods.
type pod struct {
	hostNetwork bool
	// seccomp: the runtime's default syscall filter (which a privileged container does not get).
	seccomp bool
	// container is the plugin container's security context and resources.
	container corev1.ContainerArgs
	// mounts are host paths beyond the kubelet's device-plugin directory: name → path, type.
	mounts []hostMount
	// pluginDirType is the hostPath type of the kubelet's device-plugin directory ("" unchecked).
	pluginDirType string
}

type hostMount struct{ name, path, typ string }

// nvidiaPod: a device plugin only serves a socket to the kubelet: no privilege needed (NVIDIA's
// static v0.20.0 DaemonSet, deployments/static/nvidia-device-plugin.yml). Its only write is that
// socket, on the mounted kubelet directory, so the root filesystem can be read-only (upstream's
// other writable mounts, CDI and MPS, serve features gpucluster does not enable). The directory
// must exist, as upstream's manifest requires since v0.18.0 ("Ensure that directory volumes have
// Directory type"): a missing one is the kubelet's fault, not a directory to create.
var nvidiaPod = pod{seccomp: true, pluginDirType: "Directory", container: corev1.ContainerArgs{
	SecurityContext: &corev1.SecurityContextArgs{
		AllowPrivilegeEscalation: pulumi.Bool(false),
		Capabilities:             &corev1.CapabilitiesArgs{Drop: pulumi.StringArray{pulumi.String("ALL")}},
		ReadOnlyRootFilesystem:   pulumi.Bool(true),
	},
	Resources: &corev1.ResourceRequirementsArgs{
		Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("20Mi")},
		Limits:   pulumi.StringMap{"memory": pulumi.String("100Mi")},
	},
}}

// efaPod is what the chart renders (templates/daemonset.yaml with its default values, read at
// v0.5.30; the pull requests of v0.5.31 and v0.5.32, eks-charts #1363 and #1366, bump only the
// image tag):
// the host's network, /dev/infiniband (the plugin enumerates the EFA devices there since v0.5.1,
// eks-charts #1069) and /opt/aws/neuron (since chart v0.5.16), run as root, privileged: eks-charts
// #1245 made it privileged to read Neuron devices for EFA-Neuron topology alignment. gpucluster's
// EFA nodes carry NVIDIA GPUs, not Neuron devices, but the plugin of that version was only
// published with that manifest; running it with less than upstream runs it is a guess the tests
// here cannot check, so nothing is taken away. Resources are the chart's: requests, no limit.
var efaPod = pod{
	hostNetwork: true,
	container: corev1.ContainerArgs{
		SecurityContext: &corev1.SecurityContextArgs{
			AllowPrivilegeEscalation: pulumi.Bool(true), Privileged: pulumi.Bool(true),
			RunAsNonRoot: pulumi.Bool(false), RunAsUser: pulumi.Int(0),
		},
		Resources: &corev1.ResourceRequirementsArgs{Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("20Mi")}},
	},
	mounts: []hostMount{{"infiniband-volume", "/dev/infiniband/", ""}, {"neuron-tools", "/opt/aws/neuron/", "DirectoryOrCreate"}},
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
	return newPlugin(ctx, "gpucluster:index:NvidiaDevicePlugin", name, NVIDIAName, NVIDIAImage, nvidiaPod, pools, nil, args.Labels, opts...)
}

// NewEFA deploys the EFA device plugin on the EFA pools. It tolerates the GPU taint (and every
// pool's taints), which eksctl's copy does not, so it lands on tainted GPU nodes.
func NewEFA(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Plugin, error) {
	pools := selectPools(args.Pools, func(p topology.PoolSpec) bool { return p.InCluster.EFADevicePlugin.Deploy })
	var selector map[string]string // the spec's: every EFA pool selects its EFA nodes alike
	if len(pools) > 0 {
		selector = pools[0].InCluster.EFANodeSelector
	}
	return newPlugin(ctx, "gpucluster:index:EfaDevicePlugin", name, EFAName, EFAImage(args.Region), efaPod, pools, selector, args.Labels, opts...)
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

func newPlugin(ctx *pulumi.Context, token, name, dsName, image string, shape pod, pools []topology.PoolSpec, nodeSelector, labels map[string]string,
	opts ...pulumi.ResourceOption) (*Plugin, error) {
	p := &Plugin{}
	props := pulumi.Map{"image": pulumi.String(image), "pools": pulumi.ToStringArray(k8sargs.PoolNames(pools))}
	if err := ctx.RegisterComponentResourceV2(token, name, props, p, opts...); err != nil {
		return nil, err
	}
	p.Name = pulumi.String("").ToStringOutput()
	if len(pools) > 0 {
		container := shape.container
		container.Name, container.Image = pulumi.String(dsName), pulumi.String(image)
		mounts := corev1.VolumeMountArray{corev1.VolumeMountArgs{Name: pulumi.String("device-plugins"), MountPath: pulumi.String("/var/lib/kubelet/device-plugins")}}
		pluginDir := k8sargs.HostPath("device-plugins", "/var/lib/kubelet/device-plugins")
		if shape.pluginDirType != "" {
			pluginDir.HostPath.(*corev1.HostPathVolumeSourceArgs).Type = pulumi.String(shape.pluginDirType)
		}
		volumes := corev1.VolumeArray{pluginDir}
		for _, m := range shape.mounts {
			mounts = append(mounts, corev1.VolumeMountArgs{Name: pulumi.String(m.name), MountPath: pulumi.String(m.path)})
			v := k8sargs.HostPath(m.name, m.path)
			if m.typ != "" {
				v.HostPath.(*corev1.HostPathVolumeSourceArgs).Type = pulumi.String(m.typ)
			}
			volumes = append(volumes, v)
		}
		container.VolumeMounts = mounts
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
						HostNetwork:                  pulumi.Bool(shape.hostNetwork),
						SecurityContext:              podSecurity(shape),
						NodeSelector:                 pulumi.ToStringMap(nodeSelector),
						Affinity:                     k8sargs.OnPools(pools),
						Tolerations:                  k8sargs.Tolerations(pools),
						Containers:                   corev1.ContainerArray{container},
						Volumes:                      volumes,
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

// podSecurity is the runtime's default syscall filter where it applies: a plugin serves gRPC on a
// unix socket, watches the kubelet's directory and queries devices (ioctl), all of which it allows.
func podSecurity(shape pod) corev1.PodSecurityContextPtrInput {
	if !shape.seccomp {
		return nil
	}
	return &corev1.PodSecurityContextArgs{SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")}}
}
