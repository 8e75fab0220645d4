package observability

import (
	"fmt"

	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// exporter deploys NVIDIA's DCGM exporter on every GPU node of the stack, and a Service a
// Prometheus finds its pods by.
func (m *Metrics) exporter(ctx *pulumi.Context, name string, args Args) error {
	d := args.Spec.DCGMExporter
	child := []pulumi.ResourceOption{pulumi.Parent(m), pulumi.Provider(args.K8s)}
	ds, err := appsv1.NewDaemonSet(ctx, name, exporterDaemonSet(args.Spec, args.Pools, args.Labels), child...)
	if err != nil {
		return err
	}
	// Not awaited: pulumi-kubernetes holds a Service with a selector until its endpoints name a
	// ready pod (provider/pkg/await/service.go), and a GPU pool may have no node yet (Karpenter's,
	// a pool at zero), so `pulumi up` would fail after ten minutes for a pool that is merely empty.
	md := k8sargs.WithSkipAwait(k8sargs.Metadata(d.Name, k8sargs.Namespace, args.Labels))
	if _, err := corev1.NewService(ctx, name+"-service", &corev1.ServiceArgs{
		Metadata: md,
		Spec: &corev1.ServiceSpecArgs{
			Selector: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(d.Name)},
			Ports: corev1.ServicePortArray{corev1.ServicePortArgs{
				Name: pulumi.String("metrics"), Port: pulumi.Int(d.Port), TargetPort: pulumi.String("metrics")}},
		},
	}, append(child, pulumi.DependsOn([]pulumi.Resource{ds}))...); err != nil {
		return err
	}
	m.Exporter = ds.Metadata.Name().Elem()
	return nil
}

// exporterDaemonSet is NVIDIA's chart's DaemonSet (deployment/templates/daemonset.yaml with its
// values.yaml, tag 4.5.3-4.8.2) as gpucluster places it: on the stack's GPU pools, tolerating
// every taint gpucluster puts on their nodes. As the chart runs it: root with SYS_ADMIN added
// ("Required for profiling metrics (DCGM_FI_PROF_*)", values.yaml), no privilege escalation,
// the kubelet's pod-resources socket read-only (to name the pod each GPU serves), no service
// account token (pod labels are off, so it reads nothing from the API server), the image's
// metric list, and its probes, port and resources. The GPUs are seen through the image's
// NVIDIA_VISIBLE_DEVICES=all: the EKS NVIDIA images' container runtime honours it, and on
// Bottlerocket, whose runtime shows unprivileged containers no GPU, SYS_ADMIN counts as
// privileged (topology.HealthGateSpec GPUChecksSysAdminBound): the pod requests no GPU, so it
// holds none from the jobs.
func exporterDaemonSet(o topology.ObservabilitySpec, pools []topology.PoolSpec, labels map[string]string) *appsv1.DaemonSetArgs {
	d := o.DCGMExporter
	name := pulumi.String(d.Name)
	probe := func(initial, period int) *corev1.ProbeArgs {
		p := &corev1.ProbeArgs{HttpGet: &corev1.HTTPGetActionArgs{Path: pulumi.String("/health"), Port: pulumi.Int(d.Port)},
			InitialDelaySeconds: pulumi.Int(initial)}
		if period > 0 {
			p.PeriodSeconds = pulumi.Int(period)
		}
		return p
	}
	return &appsv1.DaemonSetArgs{
		Metadata: k8sargs.Metadata(d.Name, k8sargs.Namespace, labels),
		Spec: &appsv1.DaemonSetSpecArgs{
			Selector:       &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app.kubernetes.io/name": name}},
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("RollingUpdate")},
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{
					Labels: pulumi.StringMap{"app.kubernetes.io/name": name},
					// The annotations Prometheus's usual pod discovery keeps targets by.
					Annotations: pulumi.StringMap{"prometheus.io/scrape": pulumi.String("true"), "prometheus.io/port": pulumi.String(fmt.Sprint(d.Port))},
				},
				Spec: &corev1.PodSpecArgs{
					AutomountServiceAccountToken: pulumi.Bool(false),
					PriorityClassName:            pulumi.String("system-node-critical"),
					Affinity:                     k8sargs.OnPools(pools),
					Tolerations:                  k8sargs.TolerationArgs(o.Tolerations),
					Containers: corev1.ContainerArray{corev1.ContainerArgs{
						Name:  pulumi.String("exporter"),
						Image: pulumi.String(d.Image),
						Args:  pulumi.ToStringArray([]string{"-f", d.Counters, "-c", fmt.Sprint(d.CollectIntervalMillis)}),
						Env: corev1.EnvVarArray{
							corev1.EnvVarArgs{Name: pulumi.String("DCGM_EXPORTER_KUBERNETES"), Value: pulumi.String("true")},
							corev1.EnvVarArgs{Name: pulumi.String("DCGM_EXPORTER_LISTEN"), Value: pulumi.String(fmt.Sprintf(":%d", d.Port))},
							corev1.EnvVarArgs{Name: pulumi.String("NODE_NAME"),
								ValueFrom: &corev1.EnvVarSourceArgs{FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("spec.nodeName")}}},
						},
						Ports: corev1.ContainerPortArray{corev1.ContainerPortArgs{Name: pulumi.String("metrics"), ContainerPort: pulumi.Int(d.Port)}},
						SecurityContext: &corev1.SecurityContextArgs{
							RunAsNonRoot: pulumi.Bool(false), RunAsUser: pulumi.Int(0), AllowPrivilegeEscalation: pulumi.Bool(false),
							Capabilities: &corev1.CapabilitiesArgs{Add: pulumi.ToStringArray([]string{topology.DCGMExporterCapability}), Drop: pulumi.ToStringArray([]string{"ALL"})},
						},
						Resources: &corev1.ResourceRequirementsArgs{
							Requests: pulumi.ToStringMap(topology.DCGMExporterRequests),
							Limits:   pulumi.ToStringMap(topology.DCGMExporterLimits),
						},
						LivenessProbe:  probe(45, 5),
						ReadinessProbe: probe(45, 0),
						VolumeMounts: corev1.VolumeMountArray{corev1.VolumeMountArgs{
							Name: pulumi.String("pod-gpu-resources"), MountPath: pulumi.String(podResources), ReadOnly: pulumi.Bool(true)}},
					}},
					Volumes: corev1.VolumeArray{k8sargs.HostPath("pod-gpu-resources", podResources)},
				},
			},
		},
	}
}

// podResources is the kubelet's pod-resources socket directory (the chart's kubeletPath).
const podResources = "/var/lib/kubelet/pod-resources"
