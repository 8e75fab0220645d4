package topology

// Placement is the EC2 placement-group strategy of a pool.
type Placement string

const (
	PlacementCluster   Placement = "cluster"
	PlacementPartition Placement = "partition"
	PlacementNone      Placement = "none"
)

// Fabric is the inter-node network a pool's GPUs use.
type Fabric string

const (
	FabricEFA     Fabric = "efa"
	FabricENAOnly Fabric = "ena-only"
)

// PodLayout is the shape of the training pods on a node.
type PodLayout string

const (
	// PodPerNode: one pod holds every GPU and EFA device of its node (the recommended shape:
	// ranks on one node share NVLink / SHM inside the pod).
	PodPerNode PodLayout = "pod-per-node"
	// PodPerGPU: one pod per GPU; ranks on one node then talk over the network.
	PodPerGPU PodLayout = "pod-per-gpu"
)

// CapacityType is how a pool's instances are bought.
type CapacityType string

const (
	CapacityOnDemand      CapacityType = "on-demand"
	CapacitySpot          CapacityType = "spot"
	CapacityODCR          CapacityType = "odcr"
	CapacityCapacityBlock CapacityType = "capacity-block"
)

// Reserved says whether the capacity comes from a reservation (ODCR or Capacity Block).
func (c CapacityType) Reserved() bool { return c == CapacityODCR || c == CapacityCapacityBlock }

// Provisioner is what creates a pool's nodes.
type Provisioner string

const (
	ProvisionerManagedNodeGroup Provisioner = "managed-node-group"
	ProvisionerKarpenter        Provisioner = "karpenter"
)

// AMIFamily is the node image family.
type AMIFamily string

const (
	AMIAL2023NVIDIA       AMIFamily = "al2023-nvidia"
	AMIBottlerocketNVIDIA AMIFamily = "bottlerocket-nvidia"
	AMICustom             AMIFamily = "custom"
)

// RunsHostFabricManager says whether the image itself starts nv-fabricmanager at boot.
// EKS AL2023 NVIDIA and Bottlerocket NVIDIA images do (AWS EKS AMI docs; Bottlerocket
// NVIDIA variant docs); a custom image is unknown and treated as "no".
func (a AMIFamily) RunsHostFabricManager() bool {
	return a == AMIAL2023NVIDIA || a == AMIBottlerocketNVIDIA
}

// ShipsNVIDIADevicePlugin says whether the image already runs the NVIDIA device plugin.
// Bottlerocket NVIDIA variants run it as a host service; a second copy would double-advertise.
func (a AMIFamily) ShipsNVIDIADevicePlugin() bool { return a == AMIBottlerocketNVIDIA }

// FabricManagerMode says who runs NVIDIA Fabric Manager on NVSwitch nodes.
type FabricManagerMode string

const (
	// FabricManagerAuto: the host image's when it has one, otherwise a DaemonSet.
	FabricManagerAuto FabricManagerMode = "auto"
	// FabricManagerDaemonSet: always a privileged DaemonSet (for images without it).
	FabricManagerDaemonSet FabricManagerMode = "daemonset"
	// FabricManagerHost: the image runs it; deploy nothing.
	FabricManagerHost FabricManagerMode = "host"
)

// Taint is a Kubernetes node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Toleration is a Kubernetes pod toleration (the subset pools need: no tolerationSeconds).
type Toleration struct {
	Key      string `json:"key,omitempty"`
	Operator string `json:"operator"`
	Value    string `json:"value,omitempty"`
	Effect   string `json:"effect,omitempty"`
}

// Tolerates reports whether the toleration matches the taint, with the semantics of
// k8s.io/api/core/v1 Toleration.ToleratesTaint: an empty effect matches every effect, an empty key
// with operator Exists matches every taint, Exists ignores the value.
func (tol Toleration) Tolerates(t Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case "Exists":
		return true
	case "Equal", "":
		return tol.Value == t.Value
	}
	return false
}

// Profile is the declarative description of one GPU pool. Built-in profiles fill every field a
// derivation needs; a stack's pool starts from one and overrides fields.
type Profile struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`

	InstanceType string `json:"instanceType"`
	// MinNodes..MaxNodes is the node count; equal values mean a fixed size. For Karpenter pools,
	// MaxNodes becomes the NodePool's GPU limit.
	MinNodes int `json:"minNodes"`
	MaxNodes int `json:"maxNodes"`

	Placement  Placement `json:"placement"`
	Partitions int       `json:"partitions,omitempty"`

	Fabric        Fabric `json:"fabric"`
	EFAInterfaces int    `json:"efaInterfaces,omitempty"` // 0: one per network card

	PodLayout   PodLayout `json:"podLayout"`
	PodsPerNode int       `json:"podsPerNode,omitempty"` // 0: derived from the layout

	Capacity              CapacityType `json:"capacity"`
	CapacityReservationID string       `json:"capacityReservationId,omitempty"`
	// PlacementGroupName is the cluster placement group an On-Demand Capacity Reservation was
	// created in (capacity odcr only): the pool launches into that group, which gpucluster neither
	// creates nor deletes (derivePlacement).
	PlacementGroupName string `json:"placementGroupName,omitempty"`

	Provisioner   Provisioner       `json:"provisioner"`
	AMIFamily     AMIFamily         `json:"amiFamily"`
	AMIID         string            `json:"amiId,omitempty"`
	FabricManager FabricManagerMode `json:"fabricManager"`

	ShmSize           string            `json:"shmSize"`
	AvailabilityZones []string          `json:"availabilityZones,omitempty"`
	NCCLEnv           map[string]string `json:"ncclEnv,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	Taints            []Taint           `json:"taints,omitempty"`
	Tolerations       []Toleration      `json:"tolerations,omitempty"`

	// Stopped holds a stack's pool at zero nodes while keeping everything else of it (a Capacity
	// Block pool between blocks, or before its launch template changes: see
	// CapacityBlockChangeProblem). No built-in profile is stopped.
	Stopped bool `json:"stopped,omitempty"`
	// NodeRepair turns EKS node auto repair on or off for the pool; unset, the stack decides
	// (deriveNodeRepair). No built-in profile sets it.
	NodeRepair *bool `json:"nodeRepair,omitempty"`
}

// clone returns a deep copy, so that overriding a pool never changes the built-in it started from.
func (p Profile) clone() Profile {
	c := p
	c.AvailabilityZones = append([]string(nil), p.AvailabilityZones...)
	c.Taints = append([]Taint(nil), p.Taints...)
	c.Tolerations = append([]Toleration(nil), p.Tolerations...)
	c.NCCLEnv = cloneMap(p.NCCLEnv)
	c.Labels = cloneMap(p.Labels)
	if p.NodeRepair != nil {
		repair := *p.NodeRepair
		c.NodeRepair = &repair
	}
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
