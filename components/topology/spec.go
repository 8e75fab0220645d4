package topology

import (
	"fmt"
	"time"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// The derived cluster spec: everything the Pulumi components and the review need, decided here
// and nowhere else. JSON field names are lowerCamelCase and documented in docs/json.md; they are a
// stable interface (plan.json, `gpucluster profile --json`).

// StackSpec is the derived spec of a whole stack.
type StackSpec struct {
	// Source is the stack file the spec was derived from.
	Source  string          `json:"source"`
	Stack   string          `json:"stack"`
	Region  string          `json:"region"`
	Cluster ClusterSettings `json:"cluster"`
	VPC     VPCSettings     `json:"vpc"`
	// TrainingImage is the image of the exported training pod templates.
	TrainingImage string `json:"trainingImage"`
	// NVIDIADriverVersion is the node driver a fabric-manager DaemonSet must match.
	NVIDIADriverVersion string `json:"nvidiaDriverVersion"`
	// FabricManagerImage runs fabric manager on the pools whose fabric manager is a DaemonSet:
	// the stack's own image, pinned by digest, holding nv-fabricmanager of NVIDIADriverVersion
	// ("" when no pool needs it; docs/fabric-manager.md builds one).
	FabricManagerImage string     `json:"fabricManagerImage,omitempty"`
	Pools              []PoolSpec `json:"pools"`
	// Warnings are what AWS may refuse unless an adjustable quota is raised, each placed in the file.
	Warnings ConfigErrors `json:"warnings,omitempty"`
	// Environments are the ESC environments the stack file imports, which the offline commands
	// cannot read (the engine merges them under pulumi up).
	Environments []string `json:"environments,omitempty"`
	// MaxHourlyCost is the cost guard in USD per hour (0: none); the stack is refused above it.
	MaxHourlyCost float64 `json:"maxHourlyCost,omitempty"`
	// Expiry is when every GPU pool goes to zero nodes (RFC 3339, UTC; "" for none), Owner the
	// owner or cost centre the stack is tagged with ("" for none).
	Expiry string `json:"expiresAt,omitempty"`
	Owner  string `json:"owner,omitempty"`
	// Benchmarks are the stack's benchmark settings; each pool's jobs are its Benchmark.
	Benchmarks BenchmarkSettings `json:"benchmarks"`
	// Observability is the GPU and EFA metrics the stack installs (gpucluster:observability).
	Observability ObservabilitySpec `json:"observability"`
	// At is the instant the stack was judged on (DeriveStack): the support window, the cost and
	// the expiry all read this one instant, which the caller took from its clock once.
	At time.Time `json:"-"`
}

// PoolSpec is the derived spec of one GPU pool.
type PoolSpec struct {
	Name        string `json:"name"`
	Profile     string `json:"profile"`
	Description string `json:"description,omitempty"`

	Instance    catalog.InstanceType `json:"instance"`
	Provisioner Provisioner          `json:"provisioner"`
	Scaling     Scaling              `json:"scaling"`
	// AvailabilityZones: the pool's own zones, else the VPC's first zone (resolved when the stack
	// is read); empty only for a profile derived outside a stack.
	AvailabilityZones []string      `json:"availabilityZones"`
	Capacity          CapacitySpec  `json:"capacity"`
	AMI               AMISpec       `json:"ami"`
	Storage           StorageSpec   `json:"storage"`
	Network           NetworkSpec   `json:"network"`
	Placement         PlacementSpec `json:"placement"`

	Labels      map[string]string `json:"labels"`
	Taints      []Taint           `json:"taints"`
	Tolerations []Toleration      `json:"tolerations"`
	// StartupTaints are on every new node until it is initialized (HealthTaint, which the pool's
	// health gate lifts); Taints and Tolerations do not include them.
	StartupTaints []Taint `json:"startupTaints"`
	// HealthGate is what the pool's health gate checks on each node before it lifts HealthTaint.
	HealthGate HealthGateSpec `json:"healthGate"`

	InCluster   InClusterSpec   `json:"inCluster"`
	TrainingPod TrainingPodSpec `json:"trainingPod"`
	NCCL        NCCLExpectation `json:"nccl"`
	// NodeRepair is whether EKS repairs the pool's failed nodes (decided with the stack).
	NodeRepair NodeRepairSpec `json:"nodeRepair"`
	// Benchmark is the pool's benchmark jobs (nil unless the stack enables benchmarks).
	Benchmark *PoolBenchmark `json:"benchmark,omitempty"`
	Findings  []Finding      `json:"findings"`
}

// Scaling is the node count. For Karpenter pools GPULimit caps the NodePool (MaxNodes x GPUs).
type Scaling struct {
	MinNodes     int `json:"minNodes"`
	MaxNodes     int `json:"maxNodes"`
	DesiredNodes int `json:"desiredNodes"`
	GPULimit     int `json:"gpuLimit"`
}

// String is the node count as people read it: "4", or "0-3" for a range.
func (s Scaling) String() string {
	if s.MinNodes == s.MaxNodes {
		return fmt.Sprint(s.MaxNodes)
	}
	return fmt.Sprintf("%d-%d", s.MinNodes, s.MaxNodes)
}

// CapacitySpec says how instances are bought.
type CapacitySpec struct {
	Type          CapacityType `json:"type"`
	ReservationID string       `json:"reservationId,omitempty"`
	// NodeGroupType and KarpenterType are the same choice in the words of the EKS node group
	// API (capacityType) and of Karpenter (karpenter.sh/capacity-type).
	NodeGroupType string `json:"nodeGroupType"`
	KarpenterType string `json:"karpenterType"`
	// InstanceTypeInLaunchTemplate: the instance type goes in the launch template and the managed
	// node group lists none. EKS requires it for Capacity Blocks (EKS UG "Create a managed node
	// group with Capacity Blocks for ML": the launch template names the instance type, the
	// capacity-block market type and the reservation; the node group "must not" name instance
	// types); every other pool lists its type on the node group, as EKS recommends.
	InstanceTypeInLaunchTemplate bool `json:"instanceTypeInLaunchTemplate"`
}

// AMISpec is the node image.
type AMISpec struct {
	Family AMIFamily `json:"family"`
	ID     string    `json:"id,omitempty"`
	// KarpenterAlias pins the EKS image a Karpenter pool launches ("" for custom images and
	// managed node groups, whose image EKS resolves for the cluster version).
	KarpenterAlias string `json:"karpenterAlias,omitempty"`
	// NodeGroupAMIType is the EKS node group's amiType: the family's image for the instance's
	// CPU architecture (AL2023_ARM_64_NVIDIA on p6e-gb200's Grace CPUs).
	NodeGroupAMIType string `json:"nodeGroupAmiType"`
	// NVIDIAModuleOptions are options the node's user data gives the nvidia kernel module before
	// the image loads it (nvidiaModuleOptions), with the reason.
	NVIDIAModuleOptions []string `json:"nvidiaModuleOptions,omitempty"`
	ModuleOptionsReason string   `json:"moduleOptionsReason,omitempty"`
	// NodeGroupReleaseVersion pins the managed node group to one EKS image release (its
	// releaseVersion, "1.34.9-20260714"), where the plan's facts hold only for that release's
	// driver; "" lets EKS take the newest release for the cluster's version. With the reason.
	NodeGroupReleaseVersion string `json:"nodeGroupReleaseVersion,omitempty"`
	ReleaseVersionReason    string `json:"releaseVersionReason,omitempty"`
}

// StorageSpec is a node's disk layout: its EBS volumes, and what becomes of the instance-store
// NVMe disks.
type StorageSpec struct {
	Volumes []VolumeSpec `json:"volumes"`
	// InstanceStore: RAID0 stripes every instance-store NVMe disk into one volume for containerd,
	// the kubelet and pod logs (images and scratch data of training jobs are large).
	InstanceStore string `json:"instanceStore"`
}

// VolumeSpec is one encrypted gp3 EBS volume.
type VolumeSpec struct {
	Device  string `json:"device"`
	SizeGiB int    `json:"sizeGiB"`
	// Root: the image's root volume. Bottlerocket boots from a small OS volume and keeps
	// containers on a second, data volume.
	Root bool `json:"root"`
}

// Interface types of an EC2 launch template network interface (EC2 API values).
const (
	InterfaceENA     = "interface"
	InterfaceEFAOnly = "efa-only"
)

// NetworkInterface is one launch-template network interface.
type NetworkInterface struct {
	NetworkCardIndex int    `json:"networkCardIndex"`
	DeviceIndex      int    `json:"deviceIndex"`
	InterfaceType    string `json:"interfaceType"`
	// AssociatePublicIPAddress is always false: EC2 refuses public IP auto-assignment when an
	// instance has more than one interface, and GPU nodes live in private subnets.
	AssociatePublicIPAddress bool `json:"associatePublicIpAddress"`
	DeleteOnTermination      bool `json:"deleteOnTermination"`
}

// SecurityGroupRule is one rule of the EFA security group.
type SecurityGroupRule struct {
	Direction   string `json:"direction"` // ingress | egress
	Protocol    string `json:"protocol"`  // "-1": all
	FromPort    int    `json:"fromPort"`
	ToPort      int    `json:"toPort"`
	Self        bool   `json:"self"`
	Description string `json:"description"`
}

// NetworkSpec is the pool's network layout.
type NetworkSpec struct {
	Fabric        Fabric             `json:"fabric"`
	EFAInterfaces int                `json:"efaInterfaces"`
	Interfaces    []NetworkInterface `json:"networkInterfaces"`
	// EFASecurityGroup is empty for ENA-only pools.
	EFASecurityGroup []SecurityGroupRule `json:"efaSecurityGroupRules"`
	// SingleSubnet: the pool's nodes must share one subnet (EFA traffic does not cross subnets).
	SingleSubnet bool `json:"singleSubnet"`
}

// PlacementSpec is the placement decision and why it was taken.
type PlacementSpec struct {
	Strategy   Placement `json:"strategy"`
	Partitions int       `json:"partitions,omitempty"`
	// Group is the name of a placement group that exists without gpucluster: the one the pool's
	// On-Demand Capacity Reservation was made in. The pool launches into it; nothing creates or
	// deletes it. Empty when gpucluster makes the pool's group (or there is none).
	Group  string `json:"group,omitempty"`
	Reason string `json:"reason"`
}

// Decision is one yes/no decision of the derivation, with its reason.
type Decision struct {
	Deploy bool   `json:"deploy"`
	Reason string `json:"reason"`
}

// Who runs NVIDIA Fabric Manager on a pool's nodes.
const (
	FabricManagerRunByHost      = "host"
	FabricManagerRunByDaemonSet = "daemonset"
	FabricManagerNotNeeded      = "not-needed"
)

// FabricManagerDecision says whether fabric manager is needed, who runs it, and why.
type FabricManagerDecision struct {
	Required bool   `json:"required"`
	RunBy    string `json:"runBy"`
	Deploy   bool   `json:"deployDaemonSet"`
	Reason   string `json:"reason"`
	// NVLinkSubnetManager: the NVSwitch generation needs NVLSM beside fabric manager (NVLink 5,
	// fourth-generation NVSwitch: HGX B200).
	NVLinkSubnetManager bool `json:"nvlinkSubnetManager"`
}

// InClusterSpec is which in-cluster pieces this pool needs.
type InClusterSpec struct {
	NVIDIADevicePlugin Decision              `json:"nvidiaDevicePlugin"`
	EFADevicePlugin    Decision              `json:"efaDevicePlugin"`
	FabricManager      FabricManagerDecision `json:"fabricManager"`
	// DRADriver: the NVIDIA DRA driver runs the ComputeDomains (IMEX) of pools whose NVLink
	// domain spans instances.
	DRADriver Decision `json:"draDriver"`
	// DCGMExporter: the stack's DCGM exporter runs on the pool's nodes (gpucluster:observability:
	// dcgm-exporter); verify looks for its pod on each node.
	DCGMExporter Decision `json:"dcgmExporter"`
	// NodeSelector selects this pool's nodes; EFANodeSelector its EFA nodes (empty without EFA).
	NodeSelector    map[string]string `json:"nodeSelector"`
	EFANodeSelector map[string]string `json:"efaNodeSelector,omitempty"`
}

// Kubernetes extended resource names of the device plugins.
const (
	ResourceGPU = "nvidia.com/gpu"
	ResourceEFA = "vpc.amazonaws.com/efa"
)

// EnvVar is one environment variable of the training pod and where its value comes from.
type EnvVar struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"` // "gpucluster" | "override"
	Why    string `json:"why,omitempty"`
}

// TrainingPodSpec is the recommended shape of a training pod on this pool.
type TrainingPodSpec struct {
	Layout          PodLayout      `json:"layout"`
	PodsPerNode     int            `json:"podsPerNode"`
	GPUsPerPod      int            `json:"gpusPerPod"`
	EFAPerPod       int            `json:"efaPerPod"`
	IdleGPUsPerNode int            `json:"idleGpusPerNode"`
	Resources       map[string]int `json:"resources"`
	// CPU and Memory are requested and limited alike (Guaranteed QoS), as Kubernetes quantities.
	CPU          string            `json:"cpu"`
	Memory       string            `json:"memory"`
	HostIPC      bool              `json:"hostIPC"`
	HostNetwork  bool              `json:"hostNetwork"`
	DNSPolicy    string            `json:"dnsPolicy"`
	Capabilities []string          `json:"capabilities"`
	ShmSize      string            `json:"shmSize"`
	ShmSizeBytes int64             `json:"shmSizeBytes"`
	NodeSelector map[string]string `json:"nodeSelector"`
	Tolerations  []Toleration      `json:"tolerations"`
	Env          []EnvVar          `json:"env"`
	// PluginManagedEnv are variables aws-ofi-nccl sets itself on this platform; gpucluster leaves
	// them alone, and an override of one is reported as a finding.
	PluginManagedEnv []string `json:"pluginManagedEnv,omitempty"`
	// ComputeDomain is the domain whose IMEX channel the pod claims (as claim ComputeDomainClaim)
	// on pools whose NVLink domain spans instances; nil elsewhere.
	ComputeDomain *ComputeDomainSpec `json:"computeDomain,omitempty"`
}

// Transport classes NCCL can use, as the doctor classifies log lines.
const (
	TransportNone = "none"
	// TransportUnknown: the log holds no connection line to tell (an excerpt, a log cut before
	// NCCL connected); never "none", which means there was no such peer.
	TransportUnknown           = "unknown"
	TransportP2P               = "p2p"
	TransportSHM               = "shm"
	TransportNetLibfabricGDR   = "net-libfabric-gdrdma"
	TransportNetLibfabric      = "net-libfabric"
	TransportNetSocket         = "net-socket"
	transportLogP2P            = "P2P/CUMEM or P2P/IPC"
	transportLogSHM            = "SHM"
	transportLogNetLibfabricGD = "NET/Libfabric/<n>/GDRDMA"
	transportLogNetLibfabric   = "NET/Libfabric/<n>"
	transportLogNetSocket      = "NET/Socket/<n>"
	transportLogMNNVL          = "P2P/MNNVL"
)

// Transport is an expected NCCL transport, what NCCL_DEBUG=INFO prints for it, and why.
type Transport struct {
	Class  string `json:"class"`
	Log    string `json:"log,omitempty"`
	Reason string `json:"reason"`
}

// NCCLExpectation is what a correctly built pool should show in an NCCL_DEBUG=INFO log.
type NCCLExpectation struct {
	IntraNode Transport `json:"intraNode"`
	InterNode Transport `json:"interNode"`
	// ExpectedInterNodeGbps is the link capacity the pool's interfaces can use per node;
	// PhysicalMaxGbps the instance's aggregate network bandwidth.
	ExpectedInterNodeGbps float64 `json:"expectedInterNodeGbps"`
	PhysicalMaxGbps       int     `json:"physicalMaxGbps"`
	BandwidthNote         string  `json:"bandwidthNote"`
}

// Finding severities.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
)

// Finding is something a reviewer should see about a valid pool.
type Finding struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}
