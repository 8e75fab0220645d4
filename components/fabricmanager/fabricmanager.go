// Package fabricmanager runs NVIDIA Fabric Manager as a privileged DaemonSet on the NVSwitch
// pools whose image does not run it on the host (the topology core decides which). Without
// fabric manager, NVLink through NVSwitch is unusable and CUDA fails with error 802 ("system not
// yet initialized"); the pool's health gate waits for CUDA before it lets jobs onto the node.
//
// It runs the stack's own image, pinned by digest, and installs nothing when a node starts: no
// package mirror stands between a new node and its fabric, and nothing but the content the digest
// names runs privileged on the host. docs/fabric-manager.md builds such an image.
package fabricmanager

import (
	"path/filepath"
	"strconv"

	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// CommandPort is fabric manager's command port (fabricmanager.cfg FM_CMD_PORT_NUMBER), bound to
// 127.0.0.1 of the pod: it accepts connections only once fabric manager is up and serving.
const CommandPort = 6666

// configFile is where NVIDIA's fabric-manager package puts its configuration, which the image
// must hold (docs/fabric-manager.md).
const configFile = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"

// nodeDriverVersionFile holds the version of the node's loaded NVIDIA kernel module.
const nodeDriverVersionFile = "/sys/module/nvidia/version"

// Args configure the DaemonSet.
type Args struct {
	Pools         []topology.PoolSpec
	DriverVersion string
	// Image is the stack's fabric-manager image, pinned by digest (topology.StackSpec).
	Image  string
	Labels map[string]string // the stack's ownership and lifecycle labels
}

// env is the start script's environment.
func env(a Args) corev1.EnvVarArray {
	vars := [][2]string{{"NVIDIA_DRIVER_VERSION", a.DriverVersion}, {"FM_IMAGE", a.Image}, {"FM_CONFIG", configFile},
		{"FM_STATUS", topology.FabricManagerStatusFile}, {"NODE_DRIVER_VERSION_FILE", nodeDriverVersionFile}}
	var out corev1.EnvVarArray
	for _, v := range vars {
		out = append(out, corev1.EnvVarArgs{Name: pulumi.String(v[0]), Value: pulumi.String(v[1])})
	}
	return out
}

// FabricManager is the gpucluster:index:FabricManager component.
type FabricManager struct {
	pulumi.ResourceState

	Name pulumi.StringOutput `pulumi:"name"` // the DaemonSet's name; "" when no pool needs it
}

// statusDir holds the status file, on the host and at the same path in the container.
var statusDir = filepath.Dir(topology.FabricManagerStatusFile)

// Name of the DaemonSet.
const Name = "nvidia-fabricmanager"

// New deploys fabric manager on the pools whose spec says a DaemonSet runs it.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*FabricManager, error) {
	var pools []topology.PoolSpec
	for _, p := range args.Pools {
		if p.InCluster.FabricManager.Deploy {
			pools = append(pools, p)
		}
	}
	fm := &FabricManager{}
	props := pulumi.Map{"driverVersion": pulumi.String(args.DriverVersion), "image": pulumi.String(args.Image), "pools": pulumi.ToStringArray(k8sargs.PoolNames(pools))}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:FabricManager", name, props, fm, opts...); err != nil {
		return nil, err
	}
	fm.Name = pulumi.String("").ToStringOutput()
	if len(pools) > 0 {
		ds, err := appsv1.NewDaemonSet(ctx, name, &appsv1.DaemonSetArgs{
			// k8sargs.SkipAwait: the DaemonSet updates OnDelete, and the provider's await counts it
			// ready only when every pod runs the new template (provider/pkg/await/daemonset.go,
			// v4.25.0: "OnDelete rollouts will wait until pods have been manually cleaned up unless
			// the skipAwait annotation is present"): every change would hold `pulumi up` for ten
			// minutes and fail it.
			Metadata: k8sargs.WithSkipAwait(k8sargs.Metadata(Name, k8sargs.Namespace, k8sargs.Merge(args.Labels, map[string]string{"nvidia.com/driver-version": args.DriverVersion}))),
			Spec: &appsv1.DaemonSetSpecArgs{
				Selector: &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(Name)}},
				// One node at a time, when its pod is deleted (a node replaced, or an operator in a
				// maintenance window): restarting fabric manager under a running job breaks NVLink.
				UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("OnDelete")},
				Template: &corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(Name)}},
					Spec: &corev1.PodSpecArgs{
						// The host's PIDs (fabric manager coordinates with the driver's processes); not
						// the host's network: the readiness probe runs in the container, beside fabric
						// manager's 127.0.0.1 command port, and NVSwitch is reached through /dev.
						HostPID:           pulumi.Bool(true),
						PriorityClassName: pulumi.String("system-node-critical"),
						// It never calls the API server (the health gate lifts the taint): no
						// token of kube-system/default in a privileged host-PID pod.
						AutomountServiceAccountToken: pulumi.Bool(false),
						Affinity:                     k8sargs.OnPools(pools),
						Tolerations:                  k8sargs.Tolerations(pools),
						Containers: corev1.ContainerArray{corev1.ContainerArgs{
							Name:    pulumi.String("fabricmanager"),
							Image:   pulumi.String(args.Image),
							Command: pulumi.StringArray{pulumi.String("sh"), pulumi.String("-c"), pulumi.String(startScript)},
							Env:     env(args),
							// NVSwitch devices and the driver's runtime state are the host's.
							SecurityContext: &corev1.SecurityContextArgs{Privileged: pulumi.Bool(true)},
							ReadinessProbe: &corev1.ProbeArgs{
								Exec: &corev1.ExecActionArgs{Command: pulumi.ToStringArray([]string{"bash", "-c",
									"exec 3<>/dev/tcp/127.0.0.1/" + strconv.Itoa(CommandPort)})},
								InitialDelaySeconds: pulumi.Int(20), PeriodSeconds: pulumi.Int(10), FailureThreshold: pulumi.Int(3),
							},
							Resources: &corev1.ResourceRequirementsArgs{
								Requests: pulumi.StringMap{"cpu": pulumi.String("100m"), "memory": pulumi.String("256Mi")},
								Limits:   pulumi.StringMap{"memory": pulumi.String("1Gi")},
							},
							VolumeMounts: corev1.VolumeMountArray{
								corev1.VolumeMountArgs{Name: pulumi.String("dev"), MountPath: pulumi.String("/dev")},
								corev1.VolumeMountArgs{Name: pulumi.String("run-nvidia"), MountPath: pulumi.String("/run/nvidia")},
								corev1.VolumeMountArgs{Name: pulumi.String("status"), MountPath: pulumi.String(statusDir)},
							},
						}},
						Volumes: corev1.VolumeArray{k8sargs.HostPath("dev", "/dev"), k8sargs.HostPath("run-nvidia", "/run/nvidia"),
							// The status file's directory on the host, where the health gate reads it
							// (made if missing: /run is a tmpfs, empty after each boot).
							corev1.VolumeArgs{Name: pulumi.String("status"), HostPath: &corev1.HostPathVolumeSourceArgs{
								Path: pulumi.String(statusDir), Type: pulumi.String("DirectoryOrCreate")}}},
					},
				},
			},
		}, pulumi.Parent(fm))
		if err != nil {
			return nil, err
		}
		fm.Name = ds.Metadata.Name().Elem()
	}
	return fm, ctx.RegisterResourceOutputs(fm, pulumi.Map{"name": fm.Name})
}
