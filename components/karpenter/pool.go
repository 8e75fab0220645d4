package karpenter

import (
	"fmt"
	"github.com/gpucluster/gpucluster/components/jsonmap"
	"strconv"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/topology"
)

// The EC2NodeClass and NodePool fields gpucluster writes (karpenter.k8s.aws/v1, karpenter.sh/v1).
// Karpenter's own Go types are not imported: their packages pull client-go's whole scheme and
// Karpenter's cloud provider. The tests create these objects in a kube-apiserver with the real
// v1.15.2 CRDs and strict field validation, so a field the schema does not know is an error.
type ec2NodeClassSpec struct {
	Role                             string                   `json:"role"`
	AMIFamily                        string                   `json:"amiFamily,omitempty"`
	AMISelectorTerms                 []map[string]string      `json:"amiSelectorTerms"`
	SubnetSelectorTerms              []tagTerm                `json:"subnetSelectorTerms"`
	SecurityGroupSelectorTerms       []tagTerm                `json:"securityGroupSelectorTerms"`
	PlacementGroupSelector           *placementGroupSelector  `json:"placementGroupSelector,omitempty"`
	NetworkInterfaces                []networkInterface       `json:"networkInterfaces"`
	CapacityReservationSelectorTerms []map[string]string      `json:"capacityReservationSelectorTerms,omitempty"`
	AssociatePublicIPAddress         bool                     `json:"associatePublicIPAddress"`
	BlockDeviceMappings              []blockDeviceMapping     `json:"blockDeviceMappings"`
	MetadataOptions                  topology.MetadataOptions `json:"metadataOptions"`
	InstanceStorePolicy              string                   `json:"instanceStorePolicy"`
	Tags                             map[string]string        `json:"tags"`
}

type tagTerm struct {
	Tags map[string]string `json:"tags"`
}

type placementGroupSelector struct {
	Name string `json:"name"`
}

type networkInterface struct {
	NetworkCardIndex int    `json:"networkCardIndex"`
	DeviceIndex      int    `json:"deviceIndex"`
	InterfaceType    string `json:"interfaceType"`
}

type blockDeviceMapping struct {
	DeviceName string `json:"deviceName"`
	RootVolume bool   `json:"rootVolume"`
	EBS        ebs    `json:"ebs"`
}

type ebs struct {
	VolumeSize          string `json:"volumeSize"`
	VolumeType          string `json:"volumeType"`
	Encrypted           bool   `json:"encrypted"`
	DeleteOnTermination bool   `json:"deleteOnTermination"`
}

type nodePoolSpec struct {
	Template   nodeClaimTemplate `json:"template"`
	Limits     map[string]string `json:"limits"`
	Disruption disruption        `json:"disruption"`
}

type nodeClaimTemplate struct {
	Metadata struct {
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec nodeClaimSpec `json:"spec"`
}

type nodeClaimSpec struct {
	NodeClassRef nodeClassRef     `json:"nodeClassRef"`
	Requirements []requirement    `json:"requirements"`
	Taints       []topology.Taint `json:"taints"`
	// StartupTaints: Karpenter launches for pods that do not tolerate them, and expects another
	// agent to remove them (Karpenter docs, NodePools: startupTaints).
	StartupTaints []topology.Taint `json:"startupTaints,omitempty"`
	ExpireAfter   string           `json:"expireAfter"`
}

type nodeClassRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

type requirement struct {
	Key      string   `json:"key"`
	Operator string   `json:"operator"`
	Values   []string `json:"values"`
}

type disruption struct {
	ConsolidationPolicy string   `json:"consolidationPolicy"`
	ConsolidateAfter    string   `json:"consolidateAfter"`
	Budgets             []budget `json:"budgets"`
}

type budget struct {
	Nodes   string   `json:"nodes"`
	Reasons []string `json:"reasons,omitempty"`
}

// PoolArgs configure one Karpenter pool.
type PoolArgs struct {
	Spec               topology.PoolSpec
	Cluster            string
	NodeRoleName       pulumi.StringOutput
	PlacementGroupName string // "" without a group
	Tags               map[string]string
	Controller         *Controller
	K8s                pulumi.ProviderResource
	// Needs are what the pool's instances use until they are gone, outside Karpenter (the pool's
	// placement and EFA groups, the node security group, the route to AWS's APIs).
	Needs []pulumi.Resource
	// Labels are the stack's ownership and lifecycle labels, on the EC2NodeClass and NodePool.
	Labels map[string]string
}

// Pool is the gpucluster:index:KarpenterPool component: one EC2NodeClass and one NodePool.
type Pool struct {
	pulumi.ResourceState

	NodePoolName pulumi.StringOutput `pulumi:"nodePoolName"`
}

// nodeClassSpec translates the pool's spec into its EC2NodeClass.
func nodeClassSpec(a PoolArgs, role string) ec2NodeClassSpec {
	s := a.Spec
	nc := ec2NodeClassSpec{
		Role:                       role,
		SubnetSelectorTerms:        []tagTerm{{Tags: map[string]string{topology.TagKarpenterDiscovery: a.Cluster, topology.TagZone: s.AvailabilityZones[0]}}},
		SecurityGroupSelectorTerms: []tagTerm{{Tags: map[string]string{topology.TagKarpenterDiscovery: a.Cluster}}},
		AssociatePublicIPAddress:   false,
		MetadataOptions:            topology.NodeMetadata,
		InstanceStorePolicy:        s.Storage.InstanceStore,
		Tags:                       a.Tags,
	}
	for _, v := range s.Storage.Volumes {
		nc.BlockDeviceMappings = append(nc.BlockDeviceMappings, blockDeviceMapping{DeviceName: v.Device, RootVolume: v.Root,
			EBS: ebs{VolumeSize: fmt.Sprintf("%dGi", v.SizeGiB), VolumeType: "gp3", Encrypted: true, DeleteOnTermination: true}})
	}
	switch s.AMI.Family {
	case topology.AMICustom:
		nc.AMIFamily, nc.AMISelectorTerms = "AL2023", []map[string]string{{"id": s.AMI.ID}}
	default:
		nc.AMISelectorTerms = []map[string]string{{"alias": s.AMI.KarpenterAlias}}
	}
	if len(s.Network.EFASecurityGroup) > 0 {
		nc.SecurityGroupSelectorTerms = append(nc.SecurityGroupSelectorTerms,
			tagTerm{Tags: map[string]string{topology.LabelPool: s.Name, topology.TagCluster: a.Cluster}})
	}
	if a.PlacementGroupName != "" {
		nc.PlacementGroupSelector = &placementGroupSelector{Name: a.PlacementGroupName}
	}
	for _, n := range s.Network.Interfaces {
		nc.NetworkInterfaces = append(nc.NetworkInterfaces, networkInterface{n.NetworkCardIndex, n.DeviceIndex, n.InterfaceType})
	}
	if s.Capacity.ReservationID != "" {
		nc.CapacityReservationSelectorTerms = []map[string]string{{"id": s.Capacity.ReservationID}}
	}
	return nc
}

// nodePool translates the pool's spec into its NodePool.
func nodePool(a PoolArgs, name string) nodePoolSpec {
	s := a.Spec
	var np nodePoolSpec
	np.Template.Metadata.Labels = s.Labels
	np.Template.Spec = nodeClaimSpec{
		NodeClassRef: nodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: name},
		Requirements: []requirement{
			{Key: topology.LabelInstanceType, Operator: "In", Values: []string{s.Instance.Name}},
			{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{s.Capacity.KarpenterType}},
			{Key: topology.LabelZone, Operator: "In", Values: s.AvailabilityZones},
		},
		Taints:        s.Taints,
		StartupTaints: s.StartupTaints,
		// A GPU node lives as long as its job: no forced expiry in the middle of a run.
		ExpireAfter: "Never",
	}
	np.Limits = map[string]string{topology.ResourceGPU: strconv.Itoa(s.Scaling.GPULimit)}
	// Only empty nodes are consolidated, one at a time; drift and underutilization never
	// disrupt a node (a busy GPU node is never taken from its job). Repair (the reason
	// Unhealthy) takes as many nodes at once as the topology core decided: none where the pool
	// does not repair.
	np.Disruption = disruption{ConsolidationPolicy: "WhenEmpty", ConsolidateAfter: "10m", Budgets: []budget{
		{Nodes: "0", Reasons: []string{"Drifted", "Underutilized"}},
		{Nodes: "1", Reasons: []string{"Empty"}},
		{Nodes: s.NodeRepair.UnhealthyBudget, Reasons: []string{"Unhealthy"}},
	}}
	return np
}

// NewPool creates the pool's EC2NodeClass and NodePool after the controller.
func NewPool(ctx *pulumi.Context, name string, a PoolArgs, opts ...pulumi.ResourceOption) (*Pool, error) {
	p := &Pool{}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:KarpenterPool", name, pulumi.Map{"pool": pulumi.String(a.Spec.Name)}, p, opts...); err != nil {
		return nil, err
	}
	objName := topology.PoolResourceName(a.Cluster, a.Spec.Name)
	// After the controller on create; before it on destroy, so Karpenter still runs to
	// terminate the pool's instances when its NodePool goes.
	needs := append(append([]pulumi.Resource{a.Controller.Chart}, a.Controller.Keeps...), a.Needs...)
	deps := []pulumi.ResourceOption{pulumi.Parent(p), pulumi.Provider(a.K8s), pulumi.DependsOn(needs),
		pulumi.Timeouts(&pulumi.CustomTimeouts{Delete: topology.KarpenterPoolDeleteTimeout})}
	nodeClass, err := apiextensions.NewCustomResource(ctx, name+"-nodeclass", &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String("karpenter.k8s.aws/v1"), Kind: pulumi.String("EC2NodeClass"),
		Metadata: &metav1.ObjectMetaArgs{Name: pulumi.String(objName), Labels: pulumi.ToStringMap(a.Labels)},
		OtherFields: kubernetes.UntypedArgs{"spec": a.NodeRoleName.ApplyT(func(role string) (map[string]any, error) {
			return asMap(nodeClassSpec(a, role))
		})},
	}, deps...)
	if err != nil {
		return nil, err
	}
	spec, err := asMap(nodePool(a, objName))
	if err != nil {
		return nil, err
	}
	if _, err := apiextensions.NewCustomResource(ctx, name+"-nodepool", &apiextensions.CustomResourceArgs{
		ApiVersion: pulumi.String("karpenter.sh/v1"), Kind: pulumi.String("NodePool"),
		Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(objName), Labels: pulumi.ToStringMap(a.Labels)},
		OtherFields: kubernetes.UntypedArgs{"spec": spec},
	}, append(deps, pulumi.DependsOn([]pulumi.Resource{nodeClass}))...); err != nil {
		return nil, err
	}
	p.NodePoolName = pulumi.String(objName).ToStringOutput()
	return p, ctx.RegisterResourceOutputs(p, pulumi.Map{"nodePoolName": p.NodePoolName})
}

var asMap = jsonmap.Of
