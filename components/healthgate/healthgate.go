// Package healthgate checks every GPU node before jobs may use it. Each node of a GPU pool starts
// with topology.HealthTaint; the pool's gate, a DaemonSet, runs the checks its
// topology.HealthGateSpec names on the node (CUDA, which on an NVSwitch node waits for fabric
// manager; the GPU count and model; the NVLink fabric state and topology; the EFA devices
// libfabric sees) and then, as one service account that an admission policy confines to its
// pod's own node, lifts the taint, or leaves it and labels the node with the failed check
// (topology.LabelHealthFailed) and records a Warning event saying what was found.
package healthgate

import (
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"path"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// GateName is the gate pods' app.kubernetes.io/name on every pool (each pool's DaemonSet is
// DaemonSetName); ServiceAccount the identity they act on nodes as.
const (
	GateName       = "gpucluster-health-gate"
	ServiceAccount = "gpucluster-health-gate"
)

// DaemonSetName names a pool's gate: its expectations (GPU count and model, EFA devices) are
// the pool's, passed in the pod's environment.
func DaemonSetName(pool string) string { return GateName + "-" + pool }

// CUDASampleImage is NVIDIA's CUDA vector-add sample, the GPU smoke test of the NVIDIA device
// plugin's README (NVIDIA/k8s-device-plugin README, "Running GPU Jobs"); built on
// nvidia/cuda:12.5.0-base-ubuntu22.04 (NVIDIA/k8s-samples), so it has a shell and awk, and CUDA
// 12.5 runs on every driver the pinned images carry (580). The binary prints "Test PASSED" and
// exits 0, or names the CUDA error and exits non-zero. The GPU checks run in it: the NVIDIA
// container runtime adds nvidia-smi to it (NVIDIA_DRIVER_CAPABILITIES utility).
const (
	CUDASampleImage  = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"
	CUDASampleBinary = "/cuda-samples/vectorAdd"
)

// GateImage runs the gate's decision: bash and curl without installing anything
// (topology.AL2023Image).
const GateImage = topology.AL2023Image

// EFACheckImage is the image the EFA check runs fi_info in: the default training image, which
// carries libfabric with the EFA provider as the jobs use it. The EKS AL2023 NVIDIA image installs
// only the EFA kernel module and rdma-core on the host (amazon-eks-ami
// templates/al2023/provisioners/install-efa.sh: efa_installer.sh --minimal), so fi_info is in no
// host path to borrow; and it is the image the pool's jobs pull anyway.
const EFACheckImage = topology.DefaultTrainingImage

// RetrySeconds is how often the checks ask again while CUDA or the fabric is not up yet.
const RetrySeconds = 10

// Args configure the gates.
type Args struct {
	Pools  []topology.PoolSpec
	Labels map[string]string // the stack's ownership and lifecycle labels
}

// HealthGate is the gpucluster:index:HealthGate component.
type HealthGate struct {
	pulumi.ResourceState

	DaemonSets pulumi.StringArrayOutput `pulumi:"daemonSets"` // one per GPU pool
}

// New deploys a gate on every pool with health checks, and the identity they share.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*HealthGate, error) {
	var pools []topology.PoolSpec
	for _, p := range args.Pools {
		if len(p.HealthGate.Checks) > 0 {
			pools = append(pools, p)
		}
	}
	g := &HealthGate{}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:HealthGate", name, pulumi.Map{"pools": pulumi.ToStringArray(k8sargs.PoolNames(pools))}, g, opts...); err != nil {
		return nil, err
	}
	var names pulumi.StringArray
	if len(pools) > 0 {
		binding, err := identity(ctx, name, args.Labels, pulumi.Parent(g))
		if err != nil {
			return nil, err
		}
		for _, p := range pools {
			ds, err := appsv1.NewDaemonSet(ctx, name+"-"+p.Name, daemonSet(p, args.Labels), pulumi.Parent(g), pulumi.DependsOn([]pulumi.Resource{binding}))
			if err != nil {
				return nil, err
			}
			names = append(names, ds.Metadata.Name().Elem())
		}
	}
	g.DaemonSets = names.ToStringArrayOutput()
	return g, ctx.RegisterResourceOutputs(g, pulumi.Map{"daemonSets": g.DaemonSets})
}

// nobody is the user the unprivileged containers run as: none needs root (the gate only calls
// the API server; nvidia-smi and the CUDA sample open the driver's device files, which the NVIDIA
// driver creates world-usable, mode 0666 by default).
const nobody = 65534

func unprivileged(readOnlyRoot bool) *corev1.SecurityContextArgs {
	return &corev1.SecurityContextArgs{
		RunAsNonRoot: pulumi.Bool(true), RunAsUser: pulumi.Int(nobody), AllowPrivilegeEscalation: pulumi.Bool(false),
		ReadOnlyRootFilesystem: pulumi.Bool(readOnlyRoot),
		Capabilities:           &corev1.CapabilitiesArgs{Drop: pulumi.ToStringArray([]string{"ALL"})},
	}
}

// gpuChecksSecurity is the GPU checks' security context: unprivileged, and where the image's
// NVIDIA toolkit shows unprivileged containers no GPU (Bottlerocket), CAP_SYS_ADMIN added to the
// bounding set only, which the toolkit reads as privileged (topology.HealthGateSpec
// GPUChecksSysAdminBound). As nobody with no privilege escalation the process never holds it.
// (The API server refuses allowPrivilegeEscalation false beside an added "CAP_SYS_ADMIN"; the
// capability's name here is "SYS_ADMIN", as Kubernetes names capabilities, which it accepts.)
func gpuChecksSecurity(h topology.HealthGateSpec) *corev1.SecurityContextArgs {
	sc := unprivileged(false)
	if h.GPUChecksSysAdminBound {
		sc.Capabilities = &corev1.CapabilitiesArgs{Drop: pulumi.ToStringArray([]string{"ALL"}), Add: pulumi.ToStringArray([]string{"SYS_ADMIN"})}
	}
	return sc
}

func env(vars []EnvVar) corev1.EnvVarArray {
	var out corev1.EnvVarArray
	for _, v := range vars {
		out = append(out, corev1.EnvVarArgs{Name: pulumi.String(v.Name), Value: pulumi.String(v.Value)})
	}
	return out
}

// daemonSet is a pool's gate. The GPU checks run unprivileged in the CUDA sample's image, which
// sees the node's GPUs through NVIDIA_VISIBLE_DEVICES=all: the NVIDIA container runtime
// (containerd's default runtime on the EKS NVIDIA images: amazon-eks-ami nodeadm
// runtime_config_nvidia.go) honours it for unprivileged pods by default (nvidia-container-toolkit
// accept-nvidia-visible-devices-envvar-when-unprivileged; on Bottlerocket, which turns that off,
// see gpuChecksSecurity). The pod requests no nvidia.com/gpu, so
// it takes none from the jobs. No host network: that would put the pod beside the node's
// instance metadata and role, whatever the hop limit. Only the EFA check is privileged, for the
// reason topology.HealthGateSpec.EFADevices gives.
func daemonSet(p topology.PoolSpec, labels map[string]string) *appsv1.DaemonSetArgs {
	h := p.HealthGate
	small := &corev1.ResourceRequirementsArgs{
		Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("64Mi")},
		Limits:   pulumi.StringMap{"memory": pulumi.String("256Mi")},
	}
	results := corev1.VolumeMountArray{corev1.VolumeMountArgs{Name: pulumi.String("results"), MountPath: pulumi.String(ResultsDir)}}
	inits := corev1.ContainerArray{corev1.ContainerArgs{
		Name:    pulumi.String("gpu-checks"),
		Image:   pulumi.String(CUDASampleImage),
		Command: pulumi.StringArray{pulumi.String("sh"), pulumi.String("-c"), pulumi.String(gpuChecks())},
		Env:     env(gpuEnv(h)),
		// Not read-only: the NVIDIA runtime writes the driver's libraries into the container's
		// file system when it starts it.
		SecurityContext: gpuChecksSecurity(h),
		Resources:       small,
		VolumeMounts:    gpuMounts(h, results),
	}}
	if h.EFADevices > 0 {
		inits = append(inits, corev1.ContainerArgs{
			Name:    pulumi.String("efa-check"),
			Image:   pulumi.String(EFACheckImage),
			Command: pulumi.StringArray{pulumi.String("sh"), pulumi.String("-c"), pulumi.String(efaCheck())},
			Env:     env(efaEnv(h)),
			// libfabric opens /dev/infiniband/uverbs*, which the device cgroup allows a container
			// only when privileged or granted by the EFA device plugin; see topology.HealthGateSpec.
			SecurityContext: &corev1.SecurityContextArgs{Privileged: pulumi.Bool(true)},
			Resources:       small,
			VolumeMounts:    results,
		})
	}
	return &appsv1.DaemonSetArgs{
		// k8sargs.SkipAwait: a gate's pod is Ready only once its checks are done, and a node that
		// fails them keeps it there: `pulumi up` must not wait on, or fail over, a node's health,
		// which `gpucluster verify` reports.
		Metadata: k8sargs.WithSkipAwait(k8sargs.Metadata(DaemonSetName(p.Name), k8sargs.Namespace, labels)),
		Spec: &appsv1.DaemonSetSpecArgs{
			Selector: &metav1.LabelSelectorArgs{MatchLabels: podLabels(p)},
			// OnDelete: a node is checked once, when it joins, or again when its gate pod is
			// deleted (kubectl delete pod, docs/deploy.md). A rolling update would re-run the
			// checks under running jobs whenever the gate changes: the CUDA sample then meets GPUs
			// a job holds, fails, and labels a healthy busy node failed.
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("OnDelete")},
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{Labels: podLabels(p)},
				Spec: &corev1.PodSpecArgs{
					PriorityClassName:  pulumi.String("system-node-critical"),
					ServiceAccountName: pulumi.String(ServiceAccount),
					Affinity:           k8sargs.OnPools([]topology.PoolSpec{p}),
					Tolerations:        k8sargs.Tolerations([]topology.PoolSpec{p}),
					SecurityContext:    &corev1.PodSecurityContextArgs{SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")}},
					InitContainers:     inits,
					Containers: corev1.ContainerArray{corev1.ContainerArgs{
						Name:    pulumi.String("gate"),
						Image:   pulumi.String(GateImage),
						Command: pulumi.StringArray{pulumi.String("bash"), pulumi.String("-c"), pulumi.String(gateScript())},
						Env: append(corev1.EnvVarArray{corev1.EnvVarArgs{Name: pulumi.String("NODE_NAME"), ValueFrom: &corev1.EnvVarSourceArgs{
							FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("spec.nodeName")}}}},
							env(gateEnv(h))...),
						SecurityContext: unprivileged(true),
						Resources:       small,
						VolumeMounts: corev1.VolumeMountArray{corev1.VolumeMountArgs{Name: pulumi.String("results"), MountPath: pulumi.String(ResultsDir),
							ReadOnly: pulumi.Bool(true)}},
					}},
					Volumes: gateVolumes(h),
				},
			},
		},
	}
}

// fabricManagerStatus names the volume of the fabric-manager DaemonSet's status directory on the
// host, which the GPU checks read (read-only) on pools where that DaemonSet runs.
const fabricManagerStatus = "fabricmanager-status"

func gpuMounts(h topology.HealthGateSpec, results corev1.VolumeMountArray) corev1.VolumeMountArray {
	if h.FabricManagerStatus == "" {
		return results
	}
	return append(results, corev1.VolumeMountArgs{Name: pulumi.String(fabricManagerStatus), MountPath: pulumi.String(path.Dir(h.FabricManagerStatus)), ReadOnly: pulumi.Bool(true)})
}

func gateVolumes(h topology.HealthGateSpec) corev1.VolumeArray {
	vols := corev1.VolumeArray{corev1.VolumeArgs{Name: pulumi.String("results"), EmptyDir: &corev1.EmptyDirVolumeSourceArgs{}}}
	if h.FabricManagerStatus != "" {
		// DirectoryOrCreate: the gate may start before fabric manager's pod has made it, and a
		// missing directory would keep the gate's pod from starting at all.
		vols = append(vols, corev1.VolumeArgs{Name: pulumi.String(fabricManagerStatus), HostPath: &corev1.HostPathVolumeSourceArgs{
			Path: pulumi.String(path.Dir(h.FabricManagerStatus)), Type: pulumi.String("DirectoryOrCreate")}})
	}
	return vols
}

// podLabels select a pool's gate pods: every gate's name, and the pool.
func podLabels(p topology.PoolSpec) pulumi.StringMap {
	return pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(GateName), topology.LabelPool: pulumi.String(p.Name)}
}
