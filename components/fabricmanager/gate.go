package fabricmanager

import (
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// taintLifter is the identity that removes the startup taint: a service account that may patch
// nodes. RBAC cannot narrow a DaemonSet's grant to a node by name (any node may run it), so the
// grant is patch on nodes, nothing else (no reads, no other resource), and an admission policy
// (ownNodePolicy) narrows it to the pod's own node and the startup taint. The grant waits for the
// policy: it never exists without it.
func taintLifter(ctx *pulumi.Context, name string, labels map[string]string, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	limit, err := ownNodePolicy(ctx, name, labels, opts...)
	if err != nil {
		return nil, err
	}
	sa, err := corev1.NewServiceAccount(ctx, name+"-sa", &corev1.ServiceAccountArgs{Metadata: k8sargs.Metadata(ServiceAccount, k8sargs.Namespace, labels)}, opts...)
	if err != nil {
		return nil, err
	}
	role, err := rbacv1.NewClusterRole(ctx, name+"-role", &rbacv1.ClusterRoleArgs{
		Metadata: k8sargs.Metadata(ServiceAccount, "", labels),
		Rules: rbacv1.PolicyRuleArray{rbacv1.PolicyRuleArgs{
			ApiGroups: pulumi.ToStringArray([]string{""}), Resources: pulumi.ToStringArray([]string{"nodes"}), Verbs: pulumi.ToStringArray([]string{"patch"}),
		}},
	}, opts...)
	if err != nil {
		return nil, err
	}
	return rbacv1.NewClusterRoleBinding(ctx, name+"-binding", &rbacv1.ClusterRoleBindingArgs{
		Metadata: k8sargs.Metadata(ServiceAccount, "", labels),
		RoleRef:  rbacv1.RoleRefArgs{ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("ClusterRole"), Name: pulumi.String(ServiceAccount)},
		Subjects: rbacv1.SubjectArray{rbacv1.SubjectArgs{Kind: pulumi.String("ServiceAccount"), Name: pulumi.String(ServiceAccount), Namespace: pulumi.String(k8sargs.Namespace)}},
	}, append(opts, pulumi.DependsOn([]pulumi.Resource{role, sa, limit}))...)
}

// lifterEnv is what liftTaint reads: the node (downward API) and the taint.
func lifterEnv() corev1.EnvVarArray {
	return corev1.EnvVarArray{
		corev1.EnvVarArgs{Name: pulumi.String("NODE_NAME"), ValueFrom: &corev1.EnvVarSourceArgs{
			FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("spec.nodeName")}}},
		corev1.EnvVarArgs{Name: pulumi.String("TAINT_KEY"), Value: pulumi.String(topology.FabricManagerTaint.Key)},
	}
}

// nobody is the user both gate containers run as: neither needs root (the lifter only calls the
// API server; the CUDA sample opens the driver's device files, which the NVIDIA driver creates
// world-usable, mode 0666 by default).
const nobody = 65534

func unprivileged(readOnlyRoot bool) *corev1.SecurityContextArgs {
	return &corev1.SecurityContextArgs{
		RunAsNonRoot: pulumi.Bool(true), RunAsUser: pulumi.Int(nobody), AllowPrivilegeEscalation: pulumi.Bool(false),
		ReadOnlyRootFilesystem: pulumi.Bool(readOnlyRoot),
		Capabilities:           &corev1.CapabilitiesArgs{Drop: pulumi.ToStringArray([]string{"ALL"})},
	}
}

// gate lifts the taint on nodes whose image runs fabric manager on the host. It asks through the
// driver, not fabric manager's command port, which listens on the host's 127.0.0.1 only: an init
// container runs the CUDA sample until CUDA works (cudaReadyScript), then the lifter removes the
// taint. So the pod needs no host network, which would put it beside the node's instance metadata
// and the node role whatever the hop limit, no privilege and no package install.
// The sample sees the node's GPUs through NVIDIA_VISIBLE_DEVICES=all, which the NVIDIA container
// runtime (containerd's default runtime on the EKS NVIDIA images: amazon-eks-ami nodeadm
// runtime_config_nvidia.go) honours for unprivileged pods by default (nvidia-container-toolkit
// accept-nvidia-visible-devices-envvar-when-unprivileged); it requests no nvidia.com/gpu, so it
// takes none from the jobs, and it has finished before the taint lets them in.
func gate(ctx *pulumi.Context, name string, pools []topology.PoolSpec, labels map[string]string, opts ...pulumi.ResourceOption) error {
	small := &corev1.ResourceRequirementsArgs{
		Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("64Mi")},
		Limits:   pulumi.StringMap{"memory": pulumi.String("256Mi")},
	}
	_, err := appsv1.NewDaemonSet(ctx, name, &appsv1.DaemonSetArgs{
		Metadata: k8sargs.Metadata(GateName, k8sargs.Namespace, labels),
		Spec: &appsv1.DaemonSetSpecArgs{
			Selector:       &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(GateName)}},
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("RollingUpdate")}, // a restart only re-checks
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(GateName)}},
				Spec: &corev1.PodSpecArgs{
					PriorityClassName:  pulumi.String("system-node-critical"),
					ServiceAccountName: pulumi.String(ServiceAccount),
					Affinity:           k8sargs.OnPools(pools),
					Tolerations:        k8sargs.Tolerations(pools),
					SecurityContext:    &corev1.PodSecurityContextArgs{SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")}},
					InitContainers: corev1.ContainerArray{corev1.ContainerArgs{
						Name:    pulumi.String("cuda-ready"),
						Image:   pulumi.String(CUDASampleImage),
						Command: pulumi.StringArray{pulumi.String("sh"), pulumi.String("-c"), pulumi.String(cudaReadyScript)},
						Env: corev1.EnvVarArray{
							corev1.EnvVarArgs{Name: pulumi.String("NVIDIA_VISIBLE_DEVICES"), Value: pulumi.String("all")},
							corev1.EnvVarArgs{Name: pulumi.String("NVIDIA_DRIVER_CAPABILITIES"), Value: pulumi.String("compute,utility")},
						},
						// Not read-only: the NVIDIA runtime writes the driver's libraries into the
						// container's file system when it starts it.
						SecurityContext: unprivileged(false),
						Resources:       small,
					}},
					Containers: corev1.ContainerArray{corev1.ContainerArgs{
						Name:            pulumi.String("lift-taint"),
						Image:           pulumi.String(LifterImage),
						Command:         pulumi.StringArray{pulumi.String("bash"), pulumi.String("-c"), pulumi.String(lifterScript())},
						Env:             lifterEnv(),
						SecurityContext: unprivileged(true),
						Resources:       small,
					}},
				},
			},
		},
	}, opts...)
	return err
}
