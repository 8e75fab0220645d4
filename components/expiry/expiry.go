// Package expiry stops an ephemeral cluster's GPU pools at its expiry, without anyone acting:
// managed node groups through an EventBridge Scheduler one-time schedule that calls the EKS API
// (AWS runs it even when the cluster is unhealthy), Karpenter pools through an in-cluster CronJob
// (the EKS API cannot reach a NodePool) that sets each NodePool's GPU limit to 0 and deletes its
// NodeClaims, so Karpenter terminates the instances and launches no more. The control plane, NAT
// gateway and system nodes keep running until `pulumi destroy`.
package expiry

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/scheduler"
	batchv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/batch/v1"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	rbacv1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/rbac/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// UpdateNodegroupTarget is EventBridge Scheduler's universal target for the EKS
// UpdateNodegroupConfig API, in the region's partition.
func UpdateNodegroupTarget(partition string) string {
	return "arn:" + partition + ":scheduler:::aws-sdk:eks:updateNodegroupConfig"
}

// NodeGroup is one managed node group to stop.
type NodeGroup struct {
	Pool     string
	Name     pulumi.StringInput // carries the dependency on the node group
	MaxNodes int                // EKS requires maxSize ≥ 1: the pool keeps its maximum
}

// Args configure the expiry of a stack.
type Args struct {
	At         time.Time
	Cluster    string
	Region     string
	NodeGroups []NodeGroup
	// NodePools are the Karpenter NodePools to stop; K8s the provider bound to the cluster.
	NodePools []string
	K8s       pulumi.ProviderResource
	Tags      map[string]string
	Labels    map[string]string
	// KubectlImage runs the in-cluster stop (topology.KubectlImage: the cluster's own version).
	// Only kubectl is called (no shell), one command per container.
	KubectlImage string
}

// Expiry is the gpucluster:index:Expiry component.
type Expiry struct {
	pulumi.ResourceState

	At pulumi.StringOutput `pulumi:"at"`
}

// New stops every GPU pool at args.At.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Expiry, error) {
	if args.KubectlImage == "" && len(args.NodePools) > 0 {
		return nil, fmt.Errorf("expiry %s: no kubectl image for the NodePools' stop", name)
	}
	e := &Expiry{}
	at := args.At.UTC().Format(time.RFC3339)
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Expiry", name, pulumi.Map{"at": pulumi.String(at)}, e, opts...); err != nil {
		return nil, err
	}
	child := pulumi.Parent(e)
	if len(args.NodeGroups) > 0 {
		if err := nodeGroupSchedules(ctx, name, args, child); err != nil {
			return nil, err
		}
	}
	if len(args.NodePools) > 0 {
		if err := nodePoolJob(ctx, name, args, child, pulumi.Provider(args.K8s)); err != nil {
			return nil, err
		}
	}
	e.At = pulumi.String(at).ToStringOutput()
	return e, ctx.RegisterResourceOutputs(e, pulumi.Map{"at": e.At})
}

// SchedulerPolicy is the schedules' role: UpdateNodegroupConfig on the stack's node groups only.
func SchedulerPolicy(partition, region, cluster string, nodeGroups []string) iampolicy.Document {
	var arns []string
	for _, ng := range nodeGroups {
		arns = append(arns, fmt.Sprintf("arn:%s:eks:%s:*:nodegroup/%s/%s/*", partition, region, cluster, ng))
	}
	return iampolicy.New(iampolicy.Statement{Sid: "StopNodeGroupsAtExpiry", Effect: "Allow", Action: []string{"eks:UpdateNodegroupConfig"}, Resource: arns})
}

// SchedulerTrust lets EventBridge Scheduler assume the role for the stack's schedule group only,
// in the group's account (Scheduler user guide, "Cross-service confused deputy prevention": the
// source ARN must be a schedule group, not a schedule).
func SchedulerTrust(groupARN string) iampolicy.Document {
	account := ""
	if parts := strings.Split(groupARN, ":"); len(parts) > 4 {
		account = parts[4]
	}
	return iampolicy.ServiceTrustFrom("scheduler.amazonaws.com", account, groupARN)
}

func nodeGroupSchedules(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) error {
	tags := pulumi.ToStringMap(args.Tags)
	group, err := scheduler.NewScheduleGroup(ctx, name, &scheduler.ScheduleGroupArgs{
		Name: pulumi.String(topology.ExpiryScheduleGroup(args.Cluster)), Tags: tags,
	}, opts...)
	if err != nil {
		return err
	}
	role, err := iam.NewRole(ctx, name+"-scheduler", &iam.RoleArgs{
		Name:             pulumi.String(args.Cluster + "-expiry"),
		AssumeRolePolicy: group.Arn.ApplyT(func(arn string) string { return SchedulerTrust(arn).String() }).(pulumi.StringOutput),
		Description:      pulumi.String("Stops the GPU node groups of " + args.Cluster + " at its expiry"),
		Tags:             tags,
	}, opts...)
	if err != nil {
		return err
	}
	names := pulumi.StringArray{}
	for _, ng := range args.NodeGroups {
		names = append(names, ng.Name)
	}
	policy, err := iam.NewRolePolicy(ctx, name+"-scheduler", &iam.RolePolicyArgs{
		Role: role.Name,
		Policy: names.ToStringArrayOutput().ApplyT(func(ngs []string) string {
			return SchedulerPolicy(iampolicy.Partition(args.Region), args.Region, args.Cluster, ngs).String()
		}).(pulumi.StringOutput),
	}, opts...)
	if err != nil {
		return err
	}
	// EventBridge Scheduler's at() takes local time in the schedule's time zone, without one.
	at := "at(" + args.At.UTC().Format("2006-01-02T15:04:05") + ")"
	for _, ng := range args.NodeGroups {
		maxNodes := max(ng.MaxNodes, 1)
		input := ng.Name.ToStringOutput().ApplyT(func(n string) (string, error) {
			b, err := json.Marshal(map[string]any{"ClusterName": args.Cluster, "NodegroupName": n,
				"ScalingConfig": map[string]int{"MinSize": 0, "DesiredSize": 0, "MaxSize": maxNodes}})
			return string(b), err
		}).(pulumi.StringOutput)
		if _, err := scheduler.NewSchedule(ctx, name+"-"+ng.Pool, &scheduler.ScheduleArgs{
			Name:                       pulumi.String(topology.ExpiryScheduleName(ng.Pool)),
			GroupName:                  group.Name,
			Description:                pulumi.String("Scales pool " + ng.Pool + " of " + args.Cluster + " to zero at its expiry"),
			ScheduleExpression:         pulumi.String(at),
			ScheduleExpressionTimezone: pulumi.String("UTC"),
			FlexibleTimeWindow:         scheduler.ScheduleFlexibleTimeWindowArgs{Mode: pulumi.String("OFF")},
			Target: scheduler.ScheduleTargetArgs{
				Arn: pulumi.String(UpdateNodegroupTarget(iampolicy.Partition(args.Region))), RoleArn: role.Arn, Input: input,
				RetryPolicy: scheduler.ScheduleTargetRetryPolicyArgs{MaximumRetryAttempts: pulumi.Int(10), MaximumEventAgeInSeconds: pulumi.Int(3600)},
			},
		}, append(opts, pulumi.DependsOn([]pulumi.Resource{policy}))...); err != nil {
			return err
		}
	}
	return nil
}

// JobName names the in-cluster stop (CronJob, ServiceAccount, ClusterRole and binding).
const JobName = "gpucluster-expiry"

func nodePoolJob(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) error {
	ns := k8sargs.Namespace
	sa, err := corev1.NewServiceAccount(ctx, name+"-sa", &corev1.ServiceAccountArgs{Metadata: k8sargs.Metadata(JobName, ns, args.Labels)}, opts...)
	if err != nil {
		return err
	}
	// Least privilege: patch the stack's NodePools by name; list and delete NodeClaims (a list
	// cannot be narrowed by name; the job deletes only those of the stack's pools, by label).
	role, err := rbacv1.NewClusterRole(ctx, name+"-role", &rbacv1.ClusterRoleArgs{
		Metadata: k8sargs.Metadata(JobName, "", args.Labels),
		Rules: rbacv1.PolicyRuleArray{
			rbacv1.PolicyRuleArgs{ApiGroups: pulumi.ToStringArray([]string{"karpenter.sh"}), Resources: pulumi.ToStringArray([]string{"nodepools"}),
				ResourceNames: pulumi.ToStringArray(args.NodePools), Verbs: pulumi.ToStringArray([]string{"get", "patch"})},
			rbacv1.PolicyRuleArgs{ApiGroups: pulumi.ToStringArray([]string{"karpenter.sh"}), Resources: pulumi.ToStringArray([]string{"nodeclaims"}),
				Verbs: pulumi.ToStringArray([]string{"list", "delete"})},
		},
	}, opts...)
	if err != nil {
		return err
	}
	binding, err := rbacv1.NewClusterRoleBinding(ctx, name+"-binding", &rbacv1.ClusterRoleBindingArgs{
		Metadata: k8sargs.Metadata(JobName, "", args.Labels),
		RoleRef:  rbacv1.RoleRefArgs{ApiGroup: pulumi.String("rbac.authorization.k8s.io"), Kind: pulumi.String("ClusterRole"), Name: pulumi.String(JobName)},
		Subjects: rbacv1.SubjectArray{rbacv1.SubjectArgs{Kind: pulumi.String("ServiceAccount"), Name: pulumi.String(JobName), Namespace: pulumi.String(ns)}},
	}, append(opts, pulumi.DependsOn([]pulumi.Resource{role, sa}))...)
	if err != nil {
		return err
	}
	var patches corev1.ContainerArray
	for i, np := range args.NodePools {
		patches = append(patches, kubectl(args.KubectlImage, fmt.Sprintf("limit-%d", i), "patch", "nodepool", np, "--type", "merge",
			"-p", `{"spec":{"limits":{"`+topology.ResourceGPU+`":"0"}}}`))
	}
	selector := "karpenter.sh/nodepool in (" + joinComma(args.NodePools) + ")"
	_, err = batchv1.NewCronJob(ctx, name+"-cronjob", &batchv1.CronJobArgs{
		Metadata: k8sargs.Metadata(JobName, ns, args.Labels),
		Spec: &batchv1.CronJobSpecArgs{
			// The expiry minute, day and month: a one-time stop (Kubernetes has no one-time Job;
			// the schedule would come round again a year later, on pools already at zero).
			Schedule:                   pulumi.String(args.At.UTC().Format("4 15 2 1 *")),
			TimeZone:                   pulumi.String("Etc/UTC"),
			ConcurrencyPolicy:          pulumi.String("Forbid"),
			StartingDeadlineSeconds:    pulumi.Int(3600), // a controller that was down catches up within the hour
			SuccessfulJobsHistoryLimit: pulumi.Int(1),
			JobTemplate: &batchv1.JobTemplateSpecArgs{Spec: &batchv1.JobSpecArgs{
				BackoffLimit: pulumi.Int(6),
				Template: &corev1.PodTemplateSpecArgs{
					Metadata: &metav1.ObjectMetaArgs{Labels: pulumi.ToStringMap(k8sargs.Merge(args.Labels, map[string]string{"app.kubernetes.io/name": JobName}))},
					Spec: &corev1.PodSpecArgs{
						ServiceAccountName: pulumi.String(JobName),
						RestartPolicy:      pulumi.String("OnFailure"),
						// kubectl makes HTTPS calls and writes its cache: the runtime's default
						// syscall filter allows both.
						SecurityContext: &corev1.PodSecurityContextArgs{
							SeccompProfile: &corev1.SeccompProfileArgs{Type: pulumi.String("RuntimeDefault")},
						},
						// On the system nodes, never on a node it is about to remove.
						NodeSelector:   pulumi.StringMap{topology.LabelPool: pulumi.String(topology.SystemPool)},
						InitContainers: patches,
						Volumes:        corev1.VolumeArray{corev1.VolumeArgs{Name: pulumi.String("tmp"), EmptyDir: &corev1.EmptyDirVolumeSourceArgs{}}},
						Containers:     corev1.ContainerArray{kubectl(args.KubectlImage, "delete-nodeclaims", "delete", "nodeclaims", "-l", selector, "--wait=false")},
					},
				},
			}},
		},
	}, append(opts, pulumi.DependsOn([]pulumi.Resource{binding}))...)
	return err
}

func kubectl(image, name string, args ...string) corev1.ContainerArgs {
	return corev1.ContainerArgs{
		Name: pulumi.String(name), Image: pulumi.String(image),
		// The root filesystem is read-only: kubectl keeps its discovery cache in the scratch volume.
		Command:      pulumi.ToStringArray(append([]string{"kubectl", "--cache-dir=/tmp/kube-cache"}, args...)),
		VolumeMounts: corev1.VolumeMountArray{corev1.VolumeMountArgs{Name: pulumi.String("tmp"), MountPath: pulumi.String("/tmp")}},
		SecurityContext: &corev1.SecurityContextArgs{
			AllowPrivilegeEscalation: pulumi.Bool(false), ReadOnlyRootFilesystem: pulumi.Bool(true), RunAsNonRoot: pulumi.Bool(true),
			RunAsUser:    pulumi.Int(65532),
			Capabilities: &corev1.CapabilitiesArgs{Drop: pulumi.StringArray{pulumi.String("ALL")}},
		},
		Resources: &corev1.ResourceRequirementsArgs{
			Requests: pulumi.StringMap{"cpu": pulumi.String("10m"), "memory": pulumi.String("64Mi")},
			Limits:   pulumi.StringMap{"memory": pulumi.String("128Mi")},
		},
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}
