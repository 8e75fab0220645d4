// Package karpenter installs the Karpenter controller (IAM through EKS Pod Identity, the
// interruption queue and its EventBridge rules, the OCI Helm chart) and, per Karpenter pool of
// the derived spec, one EC2NodeClass and one NodePool.
package karpenter

import (
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/iam"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/sqs"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/iampolicy"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Chart is the Karpenter controller chart, pinned. 1.11 is the first release with
// EC2NodeClass.placementGroupSelector and static networkInterfaces; the CRDs the tests install
// are this version's.
const (
	ChartRef     = "oci://public.ecr.aws/karpenter/karpenter"
	ChartVersion = "1.15.2"
)

// ServiceAccount is the controller's service account (the chart's default name).
const ServiceAccount = "karpenter"

// Args configure the controller.
type Args struct {
	// ClusterName carries the dependency on the control plane; Cluster is its known value.
	ClusterName pulumi.StringOutput
	Cluster     string
	Region      string
	// Replicas is the number of controllers (topology.SystemNodes.KarpenterReplicas).
	Replicas int
	// NodeRepair turns on the controller's node repair (topology.StackSpec.KarpenterNodeRepair).
	NodeRepair bool
	Tags       map[string]string
	// K8s is the Kubernetes provider bound to the cluster.
	K8s pulumi.ProviderResource
	// Needs are what the controller needs, outside this component, to terminate its instances
	// (the route from the system nodes to the EC2 API): the controller depends on them.
	Needs []pulumi.Resource
	// PodIdentityAgent is the cluster's EKS Pod Identity Agent, which hands the controller its
	// role: the controller's association depends on it.
	PodIdentityAgent pulumi.Resource
}

// Controller is the gpucluster:index:Karpenter component.
type Controller struct {
	pulumi.ResourceState

	RoleARN      pulumi.StringOutput `pulumi:"roleArn"`
	NodeRoleName pulumi.StringOutput `pulumi:"nodeRoleName"`
	QueueName    pulumi.StringOutput `pulumi:"queueName"`

	// Chart is the controller release: NodePools depend on it, so `pulumi destroy` deletes them
	// (and Karpenter terminates their instances) before the controller goes.
	Chart *helmv4.Chart
	// Keeps are what Karpenter's pools need until their instances are gone, besides the chart:
	// the controller's permissions, the node role's policy attachments and its access entry.
	Keeps []pulumi.Resource
}

// interruptionEvents are the EventBridge events Karpenter reacts to before AWS takes a node.
// Rules are named "<cluster>-karpenter-<name>": names short enough for EventBridge's 64
// characters with the longest cluster name (Pulumi would refuse longer auto-names).
var interruptionEvents = []struct{ name, source, detailType string }{
	{"health", "aws.health", "AWS Health Event"},
	{"spot", "aws.ec2", "EC2 Spot Instance Interruption Warning"},
	{"rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation"},
	{"state-change", "aws.ec2", "EC2 Instance State-change Notification"},
}

// New installs the controller.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Controller, error) {
	c := &Controller{}
	props := pulumi.Map{"chart": pulumi.String(ChartRef), "version": pulumi.String(ChartVersion)}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Karpenter", name, props, c, opts...); err != nil {
		return nil, err
	}
	child := pulumi.Parent(c)
	tags := pulumi.ToStringMap(args.Tags)
	partition := iampolicy.Partition(args.Region)

	queue, err := sqs.NewQueue(ctx, name+"-interruption", &sqs.QueueArgs{
		Name: pulumi.String(args.Cluster + "-karpenter"), MessageRetentionSeconds: pulumi.Int(300),
		SqsManagedSseEnabled: pulumi.Bool(true), Tags: tags,
	}, child)
	if err != nil {
		return nil, err
	}
	if _, err := sqs.NewQueuePolicy(ctx, name+"-interruption", &sqs.QueuePolicyArgs{
		QueueUrl: queue.Url,
		Policy:   queue.Arn.ApplyT(func(arn string) string { return queuePolicy(arn).String() }).(pulumi.StringOutput),
	}, child); err != nil {
		return nil, err
	}
	for _, ev := range interruptionEvents {
		pattern := fmt.Sprintf(`{"source":[%q],"detail-type":[%q]}`, ev.source, ev.detailType)
		rule, err := cloudwatch.NewEventRule(ctx, name+"-"+ev.name, &cloudwatch.EventRuleArgs{
			Name:        pulumi.String(args.Cluster + "-karpenter-" + ev.name),
			Description: pulumi.String("Karpenter interruption handling for " + args.Cluster), EventPattern: pulumi.String(pattern), Tags: tags,
		}, child)
		if err != nil {
			return nil, err
		}
		if _, err := cloudwatch.NewEventTarget(ctx, name+"-"+ev.name, &cloudwatch.EventTargetArgs{
			Rule: rule.Name, Arn: queue.Arn, TargetId: pulumi.String("KarpenterInterruptionQueue"),
		}, child); err != nil {
			return nil, err
		}
	}

	// Nodes Karpenter launches get a role of their own: EKS already holds an access entry for the
	// managed node groups' role, and creating a second entry for the same role fails.
	nodeRole, err := iam.NewRole(ctx, name+"-node", &iam.RoleArgs{
		Name:             pulumi.String(args.Cluster + "-karpenter-node"),
		AssumeRolePolicy: pulumi.String(iampolicy.ServiceTrust("ec2.amazonaws.com").String()),
		Tags:             tags,
	}, child)
	if err != nil {
		return nil, err
	}
	attachments, err := iampolicy.AttachNodePolicies(ctx, name+"-node", nodeRole.Name, partition, child)
	if err != nil {
		return nil, err
	}
	for _, a := range attachments {
		c.Keeps = append(c.Keeps, a)
	}
	// Kept until the pools' instances are gone: a draining node's kubelet still authenticates
	// with the node role, and without its entry the node goes NotReady mid-drain.
	entry, err := awseks.NewAccessEntry(ctx, name+"-node", &awseks.AccessEntryArgs{
		ClusterName: args.ClusterName, PrincipalArn: nodeRole.Arn, Type: pulumi.String("EC2_LINUX"), Tags: tags,
	}, child)
	if err != nil {
		return nil, err
	}
	c.Keeps = append(c.Keeps, entry)

	role, err := iam.NewRole(ctx, name+"-controller", &iam.RoleArgs{
		Name: pulumi.String(args.Cluster + "-karpenter"), AssumeRolePolicy: pulumi.String(iampolicy.PodIdentityTrust().String()), Tags: tags,
	}, child)
	if err != nil {
		return nil, err
	}
	policy, err := iam.NewRolePolicy(ctx, name+"-controller", &iam.RolePolicyArgs{
		Role: role.Name,
		Policy: pulumi.All(queue.Arn, nodeRole.Arn).ApplyT(func(v []any) string {
			return controllerPolicy(partition, args.Region, args.Cluster, v[0].(string), v[1].(string)).String()
		}).(pulumi.StringOutput),
	}, child)
	if err != nil {
		return nil, err
	}
	c.Keeps = append(c.Keeps, policy)
	association, err := awseks.NewPodIdentityAssociation(ctx, name, &awseks.PodIdentityAssociationArgs{
		ClusterName: args.ClusterName, Namespace: pulumi.String(k8sargs.Namespace), ServiceAccount: pulumi.String(ServiceAccount),
		RoleArn: role.Arn, Tags: tags,
	}, child, pulumi.DependsOn([]pulumi.Resource{args.PodIdentityAgent}))
	if err != nil {
		return nil, err
	}

	c.Chart, err = helmv4.NewChart(ctx, name, &helmv4.ChartArgs{
		Chart:     pulumi.String(ChartRef),
		Version:   pulumi.String(ChartVersion),
		Namespace: pulumi.String(k8sargs.Namespace),
		Values: pulumi.Map{
			"settings": pulumi.Map{"clusterName": pulumi.String(args.Cluster), "interruptionQueue": queue.Name,
				// Karpenter replaces a node whose node monitoring agent condition or Ready stays
				// false (pkg/cloudprovider RepairPolicies); an alpha gate, off by default. Repair
				// is a disruption method, held per NodePool by its Unhealthy budget: the legacy
				// controller (legacyNodeRepair), which ignores budgets, stays off, and so does
				// RebootForRepair, whose ec2:RebootInstances the policy does not grant (v1.15.2
				// charts/karpenter/values.yaml; both are written out so a chart default that
				// moves cannot change them).
				"featureGates":     pulumi.Map{"nodeRepair": pulumi.Bool(args.NodeRepair)},
				"legacyNodeRepair": pulumi.Bool(false),
				"awsFeatureGates":  pulumi.Map{"rebootForRepair": pulumi.Bool(false)}},
			"serviceAccount": pulumi.Map{"name": pulumi.String(ServiceAccount)},
			"replicas":       pulumi.Int(args.Replicas),
			// The controller runs on the system nodes: never on a node it manages.
			"nodeSelector": pulumi.Map{topology.LabelPool: pulumi.String(topology.SystemPool)},
			"controller": pulumi.Map{"resources": pulumi.Map{
				"requests": pulumi.Map{"cpu": pulumi.String("500m"), "memory": pulumi.String("512Mi")},
				"limits":   pulumi.Map{"memory": pulumi.String("1Gi")},
			}},
		},
	}, child, pulumi.Provider(args.K8s), pulumi.DependsOn(append([]pulumi.Resource{association, policy, queue}, args.Needs...)))
	if err != nil {
		return nil, err
	}
	c.RoleARN, c.NodeRoleName, c.QueueName = role.Arn, nodeRole.Name, queue.Name
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{"roleArn": c.RoleARN, "nodeRoleName": c.NodeRoleName, "queueName": c.QueueName})
}
