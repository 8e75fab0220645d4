// Package cluster builds the EKS control plane (through pulumi-eks), its KMS key, security
// groups, the node IAM role and the small untainted system node group.
package cluster

import (
	"context"
	"fmt"

	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/cloudwatch"
	awseks "github.com/pulumi/pulumi-aws/sdk/v6/go/aws/eks"
	"github.com/pulumi/pulumi-aws/sdk/v6/go/aws/kms"
	"github.com/pulumi/pulumi-eks/sdk/v2/go/eks"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Args configure a Cluster.
type Args struct {
	Region           string
	Settings         topology.ClusterSettings
	VpcID            pulumi.StringInput
	PrivateSubnetIDs pulumi.StringArrayInput
	PublicSubnetIDs  pulumi.StringArrayInput
	Tags             map[string]string
	// AWSProfile is the stack's aws:profile ("" for none): the credentials the AWS provider uses,
	// which `aws eks get-token` must use too.
	AWSProfile string
	// Needs are what the nodes use outside the cluster until they are gone (the route to AWS's
	// APIs): the system node group depends on them.
	Needs []pulumi.Resource
	// PodIdentityAgent installs the EKS Pod Identity Agent add-on (topology.StackSpec
	// NeedsPodIdentityAgent): one per cluster, whichever controllers' pods take their roles
	// through it.
	PodIdentityAgent bool
}

// Cluster is the gpucluster:index:Cluster component.
type Cluster struct {
	pulumi.ResourceState

	Name       pulumi.StringOutput `pulumi:"name"`
	Kubeconfig pulumi.StringOutput `pulumi:"kubeconfig"` // secret
	// ProviderKubeconfig is the kubeconfig the program's Kubernetes provider uses: pulumi-eks's,
	// with the stack's AWS profile for `aws eks get-token` (not an output: a user's own kubeconfig
	// names their own profile).
	ProviderKubeconfig   pulumi.StringOutput
	Endpoint             pulumi.StringOutput `pulumi:"endpoint"`
	CertificateAuthority pulumi.StringOutput `pulumi:"certificateAuthority"` // base64 PEM
	NodeSecurityGroupID  pulumi.StringOutput `pulumi:"nodeSecurityGroupId"`
	NodeRoleARN          pulumi.StringOutput `pulumi:"nodeRoleArn"`
	NodeRoleName         pulumi.StringOutput `pulumi:"nodeRoleName"`
	SystemNodeGroup      pulumi.StringOutput `pulumi:"systemNodeGroupName"`

	// NodeAccess is what every node uses until it is gone: the node security group with its
	// rules and the node role's policy attachments. Node groups depend on it, so that
	// `pulumi destroy` deletes their instances first.
	NodeAccess []pulumi.Resource
	// SystemNodes is the system node group: the Karpenter controller runs there and depends on
	// it, so it outlives every Karpenter pool during `pulumi destroy`.
	SystemNodes pulumi.Resource

	// EKS is the pulumi-eks component: node groups depend on it.
	EKS *eks.Cluster
	// PodIdentityAgent is the EKS Pod Identity Agent add-on (nil without it): a Pod Identity
	// association depends on it, so the agent serves credentials until the pods that use them
	// are gone.
	PodIdentityAgent pulumi.Resource
}

// ClusterAdminPolicy is the EKS access policy given to the stack's admin principals.
const ClusterAdminPolicy = "AmazonEKSClusterAdminPolicy"

// New creates the control plane and what every node needs.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Cluster, error) {
	s := args.Settings
	c := &Cluster{}
	props := pulumi.Map{"name": pulumi.String(s.Name), "kubernetesVersion": pulumi.String(s.KubernetesVersion)}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Cluster", name, props, c, opts...); err != nil {
		return nil, err
	}
	child := pulumi.Parent(c)
	tags := pulumi.ToStringMap(args.Tags)

	// Secrets encryption with a key of the cluster's own, rotated yearly.
	key, err := kms.NewKey(ctx, name+"-secrets", &kms.KeyArgs{
		Description:          pulumi.String("EKS secrets encryption for " + s.Name),
		EnableKeyRotation:    pulumi.Bool(true),
		DeletionWindowInDays: pulumi.Int(7),
		Tags:                 tags,
	}, child)
	if err != nil {
		return nil, err
	}
	if _, err := kms.NewAlias(ctx, name+"-secrets", &kms.AliasArgs{
		Name: pulumi.String("alias/" + s.Name + "-eks-secrets"), TargetKeyId: key.KeyId,
	}, child); err != nil {
		return nil, err
	}
	sgs, err := newSecurityGroups(ctx, name, s.Name, args.VpcID, args.Tags, child)
	if err != nil {
		return nil, err
	}
	role, attachments, err := nodeRole(ctx, name, s.Name, args.Region, tags, child)
	if err != nil {
		return nil, err
	}
	c.NodeAccess = append([]pulumi.Resource{}, sgs.nodeAccess...)
	for _, a := range attachments {
		c.NodeAccess = append(c.NodeAccess, a)
	}

	entries := map[string]eks.AccessEntryArgs{}
	for i, arn := range s.AdminRoleARNs {
		entries[fmt.Sprintf("admin-%d", i)] = eks.AccessEntryArgs{
			PrincipalArn: pulumi.String(arn),
			AccessPolicies: map[string]eks.AccessPolicyAssociationInput{
				"admin": eks.AccessPolicyAssociationArgs{
					PolicyArn:   pulumi.String("arn:" + Partition(args.Region) + ":eks::aws:cluster-access-policy/" + ClusterAdminPolicy),
					AccessScope: awseks.AccessPolicyAssociationAccessScopeArgs{Type: pulumi.String("cluster")},
				},
			},
		}
	}
	// The control-plane log group, before the cluster: EKS would create it itself, unowned and
	// without retention, and it would outlive `pulumi destroy`. The cluster depends on it, so it
	// goes only after the cluster, which would otherwise write it anew.
	var clusterDeps []pulumi.Resource
	if len(s.LogTypes) > 0 {
		logs, err := cloudwatch.NewLogGroup(ctx, name+"-control-plane-logs", &cloudwatch.LogGroupArgs{
			Name: pulumi.String(topology.ControlPlaneLogGroup(s.Name)), RetentionInDays: pulumi.Int(topology.ControlPlaneLogRetentionDays), Tags: tags,
		}, child)
		if err != nil {
			return nil, err
		}
		clusterDeps = append(clusterDeps, logs)
	}
	authMode := eks.AuthenticationModeApi
	cidrs := pulumi.ToStringArray(s.PublicAccessCIDRs)
	if !s.EndpointPublicAccess {
		cidrs = nil
	}
	c.EKS, err = eks.NewCluster(ctx, name, &eks.ClusterArgs{
		Name:                         pulumi.String(s.Name),
		Version:                      pulumi.String(s.KubernetesVersion),
		VpcId:                        args.VpcID,
		PrivateSubnetIds:             args.PrivateSubnetIDs,
		PublicSubnetIds:              args.PublicSubnetIDs,
		SkipDefaultNodeGroup:         pulumi.BoolRef(true),
		NodeAssociatePublicIpAddress: pulumi.BoolRef(false),
		UseDefaultVpcCni:             pulumi.BoolRef(true), // EKS's vpc-cni, not pulumi-eks's manifests (pulumi-eks still checks kubectl ≥ 1.24 is installed: gpucluster preflight)
		// No IAM OIDC provider: nothing uses IRSA (the Karpenter controller uses EKS Pod
		// Identity), and an unused provider is one more identity AWS will trust.
		CreateOidcProvider:              pulumi.Bool(false),
		AuthenticationMode:              &authMode,
		AccessEntries:                   entries,
		EncryptionConfigKeyArn:          key.Arn,
		EnabledClusterLogTypes:          pulumi.ToStringArray(s.LogTypes),
		EndpointPrivateAccess:           pulumi.Bool(s.EndpointPrivateAccess),
		EndpointPublicAccess:            pulumi.Bool(s.EndpointPublicAccess),
		PublicAccessCidrs:               cidrs,
		ClusterSecurityGroup:            sgs.controlPlane,
		KubernetesServiceIpAddressRange: pulumi.String(s.ServiceCIDR),
		Tags:                            tags,
	}, child, pulumi.DependsOn(clusterDeps), pulumi.Transforms([]pulumi.ResourceTransform{withUpgradePolicy(s.UpgradePolicy)}))
	if err != nil {
		return nil, err
	}

	// Known before the cluster exists (a preview shows it) yet still depends on the cluster:
	// derived from the component's URN, which carries the dependency.
	c.Name = c.EKS.URN().ApplyT(func(pulumi.URN) string { return s.Name }).(pulumi.StringOutput)
	c.Kubeconfig = pulumi.ToSecret(c.EKS.KubeconfigJson).(pulumi.StringOutput)
	c.ProviderKubeconfig = c.EKS.KubeconfigJson.ApplyT(func(k string) (string, error) { return WithProfile(k, args.AWSProfile) }).(pulumi.StringOutput)
	c.Endpoint = c.EKS.KubeconfigJson.ApplyT(func(k string) (string, error) { return kubeconfigField(k, "server") }).(pulumi.StringOutput)
	c.CertificateAuthority = c.EKS.KubeconfigJson.ApplyT(func(k string) (string, error) {
		return kubeconfigField(k, "certificate-authority-data")
	}).(pulumi.StringOutput)
	c.NodeSecurityGroupID = sgs.node.ID().ToStringOutput()
	c.NodeRoleARN = role.Arn
	c.NodeRoleName = role.Name

	ng, err := systemNodeGroup(ctx, name, s, c, args.PrivateSubnetIDs, tags, child,
		pulumi.DependsOn(append(append([]pulumi.Resource{}, c.NodeAccess...), args.Needs...)))
	if err != nil {
		return nil, err
	}
	c.SystemNodeGroup, c.SystemNodes = ng.NodeGroupName, ng
	if args.PodIdentityAgent {
		if c.PodIdentityAgent, err = podIdentityAgent(ctx, name, c, tags, ng); err != nil {
			return nil, err
		}
	}
	return c, ctx.RegisterResourceOutputs(c, pulumi.Map{
		"name": c.Name, "kubeconfig": c.Kubeconfig, "endpoint": c.Endpoint, "certificateAuthority": c.CertificateAuthority,
		"nodeSecurityGroupId": c.NodeSecurityGroupID, "nodeRoleArn": c.NodeRoleARN, "nodeRoleName": c.NodeRoleName,
		"systemNodeGroupName": c.SystemNodeGroup,
	})
}

// EKSClusterType is the type of pulumi-eks's child that is the EKS cluster itself.
const EKSClusterType = "aws:eks/cluster:Cluster"

// AWSProviderVersion is the pulumi-aws provider this program's own resources ask the engine for:
// the version of the pulumi-aws Go SDK in go.mod (its internal.PkgResourceDefaultOpts stamps it
// on every resource; TestAWSProviderVersionIsGoMods holds the two together).
const AWSProviderVersion = "6.83.4"

// PulumiEKSAWSProviderVersion is the pulumi-aws provider pulumi-eks's children ask for: the
// @pulumi/aws its released plugin bundles (pulumi-eks v2.8.1, nodejs/eks/yarn.lock resolves
// @pulumi/aws 6.45.0; the plugin is built from that lock, Makefile bin/provider ←
// nodejs/eks/node_modules ← yarn install), since @pulumi/aws stamps every resource it registers
// with its own version (utilities.resourceOptsDefaults). Its eks.Cluster has no upgradePolicy.
const PulumiEKSAWSProviderVersion = "6.45.0"

// PulumiEKSChildAWSProviderVersion is the aws provider version that serves a pulumi-eks child of
// the given type: the program's for the EKS cluster (withUpgradePolicy), the bundled one for
// every other.
func PulumiEKSChildAWSProviderVersion(typ string) string {
	if typ == EKSClusterType {
		return AWSProviderVersion
	}
	return PulumiEKSAWSProviderVersion
}

// withUpgradePolicy sets the cluster's upgrade policy (topology.UpgradePolicyExtended or
// Standard) on pulumi-eks's EKS cluster child. pulumi-eks v2 does not expose it (pulumi-eks#1776,
// fixed in v4, which needs pulumi-aws v7), and the aws provider its children ask for
// (PulumiEKSAWSProviderVersion) has no such input: its bridge refuses the key at Check, before
// the control plane exists. So the transform also has the child served by the program's own aws
// provider (AWSProviderVersion), whose eks.Cluster has upgradePolicy.supportType. A transform
// reaches a packaged component's children (Pulumi's transforms resource option), applied by the
// engine as pulumi-eks registers the child; pulumi-eks's other children keep their version.
func withUpgradePolicy(supportType string) pulumi.ResourceTransform {
	return func(_ context.Context, args *pulumi.ResourceTransformArgs) *pulumi.ResourceTransformResult {
		if args.Type != EKSClusterType {
			return nil
		}
		props := pulumi.Map{}
		for k, v := range args.Props {
			props[k] = v
		}
		props["upgradePolicy"] = pulumi.Map{"supportType": pulumi.String(supportType)}
		opts := args.Opts
		opts.Version = AWSProviderVersion
		return &pulumi.ResourceTransformResult{Props: props, Opts: opts}
	}
}
