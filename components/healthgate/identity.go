package healthgate

import (
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
)

// EventNamespace is where the gate writes its events about a node: the namespace the kubelet
// writes node events to (metav1.NamespaceDefault), where `kubectl describe node` finds them.
const EventNamespace = "default"

// identity is who the gate acts as: a service account that may patch nodes and create events in
// EventNamespace, nothing else (no reads, no other resource). RBAC cannot narrow a DaemonSet's
// grant to a node by name (any node may run it), so an admission policy (ownNodePolicy) narrows
// both grants to the pod's own node. The grants wait for the policy: they never exist without it.
func identity(ctx *pulumi.Context, name string, labels map[string]string, opts ...pulumi.ResourceOption) (pulumi.Resource, error) {
	limit, err := ownNodePolicy(ctx, name, labels, opts...)
	if err != nil {
		return nil, err
	}
	sa, err := corev1.NewServiceAccount(ctx, name+"-sa", &corev1.ServiceAccountArgs{Metadata: k8sargs.Metadata(ServiceAccount, k8sargs.Namespace, labels)}, opts...)
	if err != nil {
		return nil, err
	}
	subjects := rbacv1.SubjectArray{rbacv1.SubjectArgs{Kind: pulumi.String("ServiceAccount"), Name: pulumi.String(ServiceAccount), Namespace: pulumi.String(k8sargs.Namespace)}}
	rules := func(resource, verb string) rbacv1.PolicyRuleArray {
		return rbacv1.PolicyRuleArray{rbacv1.PolicyRuleArgs{
			ApiGroups: pulumi.ToStringArray([]string{""}), Resources: pulumi.ToStringArray([]string{resource}), Verbs: pulumi.ToStringArray([]string{verb}),
		}}
	}
	nodes, err := rbacv1.NewClusterRole(ctx, name+"-role", &rbacv1.ClusterRoleArgs{
		Metadata: k8sargs.Metadata(ServiceAccount, "", labels), Rules: rules("nodes", "patch"),
	}, opts...)
	if err != nil {
		return nil, err
	}
	events, err := rbacv1.NewRole(ctx, name+"-events-role", &rbacv1.RoleArgs{
		Metadata: k8sargs.Metadata(ServiceAccount, EventNamespace, labels), Rules: rules("events", "create"),
	}, opts...)
	if err != nil {
		return nil, err
	}
	after := pulumi.DependsOn([]pulumi.Resource{sa, limit})
	nodesBinding, err := rbacv1.NewClusterRoleBinding(ctx, name+"-binding", &rbacv1.ClusterRoleBindingArgs{
		Metadata: k8sargs.Metadata(ServiceAccount, "", labels),
		RoleRef:  rbacv1.RoleRefArgs{ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("ClusterRole"), Name: pulumi.String(ServiceAccount)},
		Subjects: subjects,
	}, append(opts, after, pulumi.DependsOn([]pulumi.Resource{nodes}))...)
	if err != nil {
		return nil, err
	}
	return rbacv1.NewRoleBinding(ctx, name+"-events-binding", &rbacv1.RoleBindingArgs{
		Metadata: k8sargs.Metadata(ServiceAccount, EventNamespace, labels),
		RoleRef:  rbacv1.RoleRefArgs{ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("Role"), Name: pulumi.String(ServiceAccount)},
		Subjects: subjects,
	}, append(opts, after, pulumi.DependsOn([]pulumi.Resource{events, nodesBinding}))...)
}
