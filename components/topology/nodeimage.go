package topology

import "github.com/gpucluster/gpucluster/components/topology/catalog"

// What a node is built from, decided once for managed node groups and Karpenter alike: how its
// capacity is bought in each API's words, which image Karpenter pins, the instance metadata
// options, and the disk layout.

// nodeGroupCapacityType is the EKS node group API's capacityType: an ODCR is launched on demand
// (the launch template targets the reservation); a Capacity Block has its own type.
var nodeGroupCapacityType = map[CapacityType]string{
	CapacityOnDemand: "ON_DEMAND", CapacitySpot: "SPOT", CapacityODCR: "ON_DEMAND", CapacityCapacityBlock: "CAPACITY_BLOCK",
}

// karpenterCapacityType is Karpenter's karpenter.sh/capacity-type: both reservation kinds are
// "reserved" (Karpenter ≥ 1.3, capacityReservationSelectorTerms).
var karpenterCapacityType = map[CapacityType]string{
	CapacityOnDemand: "on-demand", CapacitySpot: "spot", CapacityODCR: "reserved", CapacityCapacityBlock: "reserved",
}

// MetadataOptions are a node's instance metadata settings (EC2 launch templates and Karpenter's
// EC2NodeClass take the same three).
type MetadataOptions struct {
	HTTPEndpoint string `json:"httpEndpoint"`
	HTTPTokens   string `json:"httpTokens"`
	HopLimit     int    `json:"httpPutResponseHopLimit"`
}

// NodeMetadata: IMDSv2 only, one hop (see IMDSHopLimit).
var NodeMetadata = MetadataOptions{HTTPEndpoint: "enabled", HTTPTokens: "required", HopLimit: IMDSHopLimit}

// rootVolumeGiB holds the OS, images that do not fit the instance store and logs; training data
// lives on the RAID0 of the instance-store NVMe disks.
const rootVolumeGiB = 200

// bottlerocketOSVolumeGiB is Bottlerocket's own OS volume (its AMI's default).
const bottlerocketOSVolumeGiB = 4

// deriveStorage lays out a node's disks: AL2023 and custom images boot from one root volume;
// Bottlerocket boots from its small OS volume and keeps containers on a data volume.
func deriveStorage(family AMIFamily) StorageSpec {
	s := StorageSpec{InstanceStore: "RAID0"}
	if family == AMIBottlerocketNVIDIA {
		s.Volumes = []VolumeSpec{{Device: "/dev/xvda", SizeGiB: bottlerocketOSVolumeGiB, Root: true}, {Device: "/dev/xvdb", SizeGiB: rootVolumeGiB}}
		return s
	}
	s.Volumes = []VolumeSpec{{Device: "/dev/xvda", SizeGiB: rootVolumeGiB, Root: true}}
	return s
}

func deriveAMI(p Profile, it catalog.InstanceType) AMISpec {
	a := AMISpec{Family: p.AMIFamily, ID: p.AMIID, NodeGroupAMIType: nodeGroupAMITypes[p.AMIFamily][it.CPUArch]}
	if p.Provisioner == ProvisionerKarpenter && p.AMIFamily == AMIAL2023NVIDIA {
		a.KarpenterAlias = KarpenterAL2023Alias
	}
	return a
}

// nodeGroupAMITypes are the EKS node group AMI types of each image family by CPU architecture
// (EKS API CreateNodegroup, amiType: AL2023_ARM_64_NVIDIA for Graviton and Grace GPU nodes).
var nodeGroupAMITypes = map[AMIFamily]map[string]string{
	AMIAL2023NVIDIA:       {catalog.ArchAMD64: "AL2023_x86_64_NVIDIA", catalog.ArchARM64: "AL2023_ARM_64_NVIDIA"},
	AMIBottlerocketNVIDIA: {catalog.ArchAMD64: "BOTTLEROCKET_x86_64_NVIDIA", catalog.ArchARM64: "BOTTLEROCKET_ARM_64_NVIDIA"},
	AMICustom:             {catalog.ArchAMD64: "CUSTOM", catalog.ArchARM64: "CUSTOM"},
}
