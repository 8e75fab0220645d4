package fabricmanager

import (
	"strconv"

	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// taintLifter is the identity that removes the startup taint: a service account that may patch
// nodes. A node cannot be narrowed by name for a DaemonSet (any node may run it), so the grant is
// patch on nodes, nothing else: no reads, no other resource.
func taintLifter(ctx *pulumi.Context, name string, labels map[string]string, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
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
	}, append(opts, pulumi.DependsOn([]pulumi.Resource{role, sa}))...)
}

// lifterEnv is what liftTaint reads: the node (downward API), the taint and the port.
func lifterEnv() corev1.EnvVarArray {
	return corev1.EnvVarArray{
		corev1.EnvVarArgs{Name: pulumi.String("NODE_NAME"), ValueFrom: &corev1.EnvVarSourceArgs{
			FieldRef: &corev1.ObjectFieldSelectorArgs{FieldPath: pulumi.String("spec.nodeName")}}},
		corev1.EnvVarArgs{Name: pulumi.String("TAINT_KEY"), Value: pulumi.String(topology.FabricManagerTaint.Key)},
		corev1.EnvVarArgs{Name: pulumi.String("FM_PORT"), Value: pulumi.String(strconv.Itoa(CommandPort))},
	}
}

// gate lifts the taint on nodes whose image runs fabric manager on the host: on the host's
// network, it waits for the host's fabric manager on 127.0.0.1:CommandPort (fabricmanager.cfg's
// default bind address and port). It needs no privilege: root only for apt-get's curl.
func gate(ctx *pulumi.Context, name string, pools []topology.PoolSpec, labels map[string]string, opts ...pulumi.ResourceOption) error {
	_, err := appsv1.NewDaemonSet(ctx, name, &appsv1.DaemonSetArgs{
		Metadata: k8sargs.Metadata(GateName, k8sargs.Namespace, labels),
		Spec: &appsv1.DaemonSetSpecArgs{
			Selector:       &metav1.LabelSelectorArgs{MatchLabels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(GateName)}},
			UpdateStrategy: &appsv1.DaemonSetUpdateStrategyArgs{Type: pulumi.String("RollingUpdate")}, // a restart only re-checks
			Template: &corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.StringMap{"app.kubernetes.io/name": pulumi.String(GateName)}},
				Spec: &corev1.PodSpecArgs{
					HostNetwork:        pulumi.Bool(true), // the host's 127.0.0.1, where its fabric manager listens
					PriorityClassName:  pulumi.String("system-node-critical"),
					ServiceAccountName: pulumi.String(ServiceAccount),
					Affinity:           k8sargs.OnPools(pools),
					Tolerations:        k8sargs.Tolerations(pools),
					SecurityContext:    &corev1.PodSecurityContextArgs{SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")}},
					Containers: corev1.ContainerArray{corev1.ContainerArgs{
						Name:            pulumi.String("gate"),
						Image:           pulumi.String(BaseImage),
						Command:         pulumi.StringArray{pulumi.String("bash"), pulumi.String("-c"), pulumi.String(gateScript())},
						Env:             lifterEnv(),
						SecurityContext: &corev1.SecurityContextArgs{AllowPrivilegeEscalation: pulumi.Bool(false)},
						Resources: &corev1.ResourceRequirementsArgs{
							Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("64Mi")},
							Limits:   pulumi.StringMap{"memory": pulumi.String("256Mi")},
						},
					}},
				},
			},
		},
	}, opts...)
	return err
}
