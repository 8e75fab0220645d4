// Package fabricmanager runs NVIDIA Fabric Manager as a privileged DaemonSet on the NVSwitch
// pools whose image does not run it on the host (the topology core decides which). Without it,
// NVLink through NVSwitch is unusable and CUDA fails with error 802 ("system not yet initialized").
package fabricmanager

import (
	"strconv"
	"strings"

	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// BaseImage carries NVIDIA's CUDA apt repository, from which the container installs the
// fabric-manager package of exactly the node's driver version (the package is versioned with
// the driver, and fabric manager refuses a driver of another version).
const BaseImage = "nvcr.io/nvidia/cuda:12.8.1-base-ubuntu22.04"

// CommandPort is fabric manager's command port (fabricmanager.cfg FM_CMD_PORT_NUMBER), bound to
// 127.0.0.1 of the pod: it accepts connections only once fabric manager is up and serving.
const CommandPort = 6666

const configFile = "/usr/share/nvidia/nvswitch/fabricmanager.cfg"

// Args configure the DaemonSet.
type Args struct {
	Pools         []topology.PoolSpec
	DriverVersion string
	Labels        map[string]string // the stack's ownership and lifecycle labels
}

// FabricManager is the gpucluster:index:FabricManager component.
type FabricManager struct {
	pulumi.ResourceState

	Name pulumi.StringOutput `pulumi:"name"` // the DaemonSet's name; "" when no pool needs it
}

// Name of the DaemonSet.
const Name = "nvidia-fabricmanager"

// script installs the fabric manager matching the driver and runs it in the foreground.
func script(driver string) string {
	major, _, _ := strings.Cut(driver, ".")
	return strings.Join([]string{
		"set -eu",
		"apt-get update -qq",
		"apt-get install -y -qq --no-install-recommends nvidia-fabricmanager-" + major + "=" + driver + "-1",
		// Stay in the foreground so the kubelet supervises it.
		"sed -i 's/^DAEMONIZE=.*/DAEMONIZE=0/' " + configFile,
		"exec nv-fabricmanager -c " + configFile,
	}, "\n")
}

// New deploys fabric manager on the pools whose spec says a DaemonSet runs it.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*FabricManager, error) {
	var pools []topology.PoolSpec
	for _, p := range args.Pools {
		if p.InCluster.FabricManager.Deploy {
			pools = append(pools, p)
		}
	}
	fm := &FabricManager{}
	props := pulumi.Map{"driverVersion": pulumi.String(args.DriverVersion), "pools": pulumi.ToStringArray(k8sargs.PoolNames(pools))}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:FabricManager", name, props, fm, opts...); err != nil {
		return nil, err
	}
	fm.Name = pulumi.String("").ToStringOutput()
	if len(pools) > 0 {
		labels := pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(Name)}
		ds, err := appsv1.NewDaemonSet(ctx, name, &appsv1.DaemonSetArgs{
			Metadata: k8sargs.Metadata(Name, k8sargs.Namespace, k8sargs.Merge(args.Labels, map[string]string{"nvidia.com/driver-version": args.DriverVersion})),
			Spec: &appsv1.DaemonSetSpecArgs{
				Selector: &metav1.LabelSelectorArgs{MatchLabels: labels},
				// One node at a time: restarting fabric manager under a running job breaks NVLink.
				UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("OnDelete")},
				Template: &corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: labels},
					Spec: &corev1.PodSpecArgs{
						// The host's PIDs (fabric manager coordinates with the driver's processes); not
						// the host's network: the readiness probe runs in the container, beside fabric
						// manager's 127.0.0.1 command port, and NVSwitch is reached through /dev.
						HostPID:                      pulumi.Bool(true),
						PriorityClassName:            pulumi.String("system-node-critical"),
						AutomountServiceAccountToken: pulumi.Bool(false),
						Affinity:                     k8sargs.OnPools(pools),
						Tolerations:                  k8sargs.Tolerations(pools),
						Containers: corev1.ContainerArray{corev1.ContainerArgs{
							Name:    pulumi.String("fabricmanager"),
							Image:   pulumi.String(BaseImage),
							Command: pulumi.StringArray{pulumi.String("bash"), pulumi.String("-c"), pulumi.String(script(args.DriverVersion))},
							Env:     corev1.EnvVarArray{corev1.EnvVarArgs{Name: pulumi.String("NVIDIA_DRIVER_VERSION"), Value: pulumi.String(args.DriverVersion)}},
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
							},
						}},
						Volumes: corev1.VolumeArray{k8sargs.HostPath("dev", "/dev"), k8sargs.HostPath("run-nvidia", "/run/nvidia")},
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
