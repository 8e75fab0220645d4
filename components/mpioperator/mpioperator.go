// Package mpioperator installs the Kubeflow MPI Operator, which runs the MPIJobs of the benchmark
// (kubeflow.org/v2beta1): the upstream CRD at a pinned release, and the controller built here
// from the release's own manifests (manifests/base) so that it runs on the system nodes,
// hardened, with the release's exact permissions (a test holds the rules to the module's).
package mpioperator

import (
	appsv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apps/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// The pinned release: v0.8.2, the version Kueue integrates with. It serves kubeflow.org/v2beta1
// with launcherCreationPolicy, which the benchmark's launcher uses to wait for its workers, and
// watches one namespace when asked (--namespace). Image and CRD are the release's own.
const (
	Version = "v0.8.2"
	Image   = "mpioperator/mpi-operator:0.8.2"
	CRDURL  = "https://raw.githubusercontent.com/kubeflow/mpi-operator/" + Version + "/manifests/base/kubeflow.org_mpijobs.yaml"
	// Name names the namespace, the controller and its permissions (the release's standalone
	// overlay: the namespace is also the controller's leader-election lock namespace).
	Name = "mpi-operator"
)

// Rule is one RBAC rule of the controller.
type Rule struct {
	APIGroups, Resources, Verbs []string
}

// The release grants its controller one ClusterRole (manifests/base/cluster-role.yaml): secrets,
// pods and pods/exec in every namespace. gpucluster runs it watching only the benchmark jobs'
// namespace (--namespace) and splits the same rules by where they apply; each rule is one of
// the release's (a test holds them to it), none is added. Left out: pods/exec (v0.8.2's
// controller never execs: neither pkg/ nor cmd/ holds an exec call), endpoints (its leader
// election uses a Lease), customresourcedefinitions (with --namespace it checks the CRD by
// listing MPIJobs there), and podgroups and queues (gang scheduling is off).
var (
	// JobRules hold in the jobs' namespace: what the controller needs to run a job (its pods,
	// the launcher Job, the per-job ssh secret, hostfile config map and service, events).
	JobRules = []Rule{
		{[]string{""}, []string{"configmaps", "secrets", "services"}, []string{"create", "list", "watch", "update"}},
		{[]string{""}, []string{"pods"}, []string{"create", "get", "list", "watch", "delete", "update", "patch"}},
		{[]string{""}, []string{"events"}, []string{"create", "patch"}},
		{[]string{"batch"}, []string{"jobs"}, []string{"create", "list", "update", "watch"}},
		{[]string{"kubeflow.org"}, []string{"mpijobs", "mpijobs/finalizers", "mpijobs/status"}, []string{"*"}},
	}
	// LockRules hold in its own namespace: the leader-election Lease and its events.
	LockRules = []Rule{
		{[]string{"coordination.k8s.io"}, []string{"leases"}, []string{"*"}},
		{[]string{""}, []string{"events"}, []string{"create", "patch"}},
	}
	// ClusterRules hold cluster-wide: priority classes, which are cluster-scoped and which its
	// controller's informers read whatever the namespace.
	ClusterRules = []Rule{
		{[]string{"scheduling.k8s.io"}, []string{"priorityclasses"}, []string{"get", "list", "watch"}},
	}
)

// Args configure the operator.
type Args struct {
	Labels map[string]string
	// Needs are what the controller needs while MPIJobs are deleted (the system nodes it runs on).
	Needs []pulumi.Resource
}

// Operator is the gpucluster:index:MPIOperator component.
type Operator struct {
	pulumi.ResourceState

	Version pulumi.StringOutput `pulumi:"version"`
	// CRD is the MPIJob definition; Controller the operator's Deployment.
	CRD        pulumi.Resource
	Controller *appsv1.Deployment
}

// configFile registers pulumi-kubernetes' yaml/v2 ConfigFile (a component the provider expands)
// by its type token. The yaml/v2 Go package would import 63 Kubernetes API packages for its
// output types, none of which gpucluster reads.
type configFile struct {
	pulumi.ResourceState
}

// New installs the operator.
func New(ctx *pulumi.Context, name string, args Args, k8s pulumi.ProviderResource, opts ...pulumi.ResourceOption) (*Operator, error) {
	o := &Operator{}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:MPIOperator", name, pulumi.Map{"version": pulumi.String(Version)}, o, opts...); err != nil {
		return nil, err
	}
	o.Version = pulumi.String(Version).ToStringOutput()
	child := []pulumi.ResourceOption{pulumi.Parent(o), pulumi.Provider(k8s)}
	var crd configFile
	if err := ctx.RegisterRemoteComponentResource("kubernetes:yaml/v2:ConfigFile", name+"-crd", pulumi.Map{"file": pulumi.String(CRDURL)}, &crd,
		pulumi.Parent(o), pulumi.Providers(k8s)); err != nil {
		return nil, err
	}
	o.CRD = &crd
	ns, err := corev1.NewNamespace(ctx, name+"-namespace", &corev1.NamespaceArgs{Metadata: k8sargs.Metadata(Name, "", args.Labels)}, child...)
	if err != nil {
		return nil, err
	}
	inNS := append(child, pulumi.DependsOn([]pulumi.Resource{ns}))
	sa, err := corev1.NewServiceAccount(ctx, name+"-sa", &corev1.ServiceAccountArgs{Metadata: k8sargs.Metadata(Name, Name, args.Labels)}, inNS...)
	if err != nil {
		return nil, err
	}
	binding, err := bindRules(ctx, name, args, sa, child)
	if err != nil {
		return nil, err
	}
	selector := map[string]string{"app.kubernetes.io/name": Name}
	// The controller must outlive every MPIJob's pods (it deletes them) and run on the system
	// nodes: it depends on them, on its permissions and on the CRD it watches.
	deps := append(append(append([]pulumi.Resource{}, args.Needs...), binding...), &crd)
	o.Controller, err = appsv1.NewDeployment(ctx, name+"-controller", &appsv1.DeploymentArgs{
		Metadata: k8sargs.Metadata(Name, Name, args.Labels),
		Spec: appsv1.DeploymentSpecArgs{
			Replicas: pulumi.Int(1),
			Selector: &metav1.LabelSelectorArgs{MatchLabels: pulumi.ToStringMap(selector)},
			Template: corev1.PodTemplateSpecArgs{
				Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.ToStringMap(k8sargs.Merge(args.Labels, selector))},
				Spec: corev1.PodSpecArgs{
					ServiceAccountName: pulumi.String(Name),
					NodeSelector:       pulumi.StringMap{topology.LabelPool: pulumi.String(topology.SystemPool)},
					SecurityContext:    &corev1.PodSecurityContextArgs{SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")}},
					Containers: corev1.ContainerArray{corev1.ContainerArgs{
						Name: pulumi.String(Name), Image: pulumi.String(Image),
						Args: pulumi.ToStringArray([]string{"-alsologtostderr", "--lock-namespace=" + Name, "--namespace=" + topology.BenchmarkNamespace}),
						// The image is distroless and needs no file of its own: nobody, read-only.
						SecurityContext: &corev1.SecurityContextArgs{
							AllowPrivilegeEscalation: pulumi.Bool(false), ReadOnlyRootFilesystem: pulumi.Bool(true), RunAsNonRoot: pulumi.Bool(true),
							RunAsUser: pulumi.Int(65532), Capabilities: &corev1.CapabilitiesArgs{Drop: pulumi.StringArray{pulumi.String("ALL")}},
						},
						Resources: &corev1.ResourceRequirementsArgs{
							Requests: pulumi.StringMap{"cpu": pulumi.String("100m"), "memory": pulumi.String("128Mi")},
							Limits:   pulumi.StringMap{"memory": pulumi.String("512Mi")},
						},
					}},
				},
			},
		},
	}, append(inNS, pulumi.DependsOn(deps))...)
	if err != nil {
		return nil, err
	}
	return o, ctx.RegisterResourceOutputs(o, pulumi.Map{"version": o.Version})
}

// policy is rules as Kubernetes writes them.
func policy(rules []Rule) rbacv1.PolicyRuleArray {
	var out rbacv1.PolicyRuleArray
	for _, r := range rules {
		out = append(out, rbacv1.PolicyRuleArgs{ApiGroups: pulumi.ToStringArray(r.APIGroups), Resources: pulumi.ToStringArray(r.Resources), Verbs: pulumi.ToStringArray(r.Verbs)})
	}
	return out
}

// bindRules grants the controller's service account its rules: a Role in the jobs' namespace, a
// Role in its own, a ClusterRole for what is cluster-scoped. It returns the bindings, which the
// controller depends on.
func bindRules(ctx *pulumi.Context, name string, args Args, sa pulumi.Resource, child []pulumi.ResourceOption) ([]pulumi.Resource, error) {
	subjects := rbacv1.SubjectArray{rbacv1.SubjectArgs{Kind: pulumi.String("ServiceAccount"), Name: pulumi.String(Name), Namespace: pulumi.String(Name)}}
	var bindings []pulumi.Resource
	for _, ns := range []struct {
		suffix, namespace string
		rules             []Rule
	}{{"jobs", topology.BenchmarkNamespace, JobRules}, {"lock", Name, LockRules}} {
		role, err := rbacv1.NewRole(ctx, name+"-"+ns.suffix+"-role", &rbacv1.RoleArgs{Metadata: k8sargs.Metadata(Name, ns.namespace, args.Labels), Rules: policy(ns.rules)},
			append(child, pulumi.DependsOn([]pulumi.Resource{sa}))...)
		if err != nil {
			return nil, err
		}
		b, err := rbacv1.NewRoleBinding(ctx, name+"-"+ns.suffix+"-binding", &rbacv1.RoleBindingArgs{
			Metadata: k8sargs.Metadata(Name, ns.namespace, args.Labels),
			RoleRef:  rbacv1.RoleRefArgs{ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("Role"), Name: pulumi.String(Name)},
			Subjects: subjects,
		}, append(child, pulumi.DependsOn([]pulumi.Resource{role, sa}))...)
		if err != nil {
			return nil, err
		}
		bindings = append(bindings, b)
	}
	role, err := rbacv1.NewClusterRole(ctx, name+"-role", &rbacv1.ClusterRoleArgs{Metadata: k8sargs.Metadata(Name, "", args.Labels), Rules: policy(ClusterRules)}, child...)
	if err != nil {
		return nil, err
	}
	b, err := rbacv1.NewClusterRoleBinding(ctx, name+"-binding", &rbacv1.ClusterRoleBindingArgs{
		Metadata: k8sargs.Metadata(Name, "", args.Labels),
		RoleRef:  rbacv1.RoleRefArgs{ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("ClusterRole"), Name: pulumi.String(Name)},
		Subjects: subjects,
	}, append(child, pulumi.DependsOn([]pulumi.Resource{role, sa}))...)
	if err != nil {
		return nil, err
	}
	return append(bindings, b), nil
}
