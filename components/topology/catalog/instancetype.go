package catalog

import (
	"fmt"
	"sort"
)

// Interconnect is how the GPUs inside one instance reach each other.
type Interconnect string

const (
	// InterconnectNVSwitch: every GPU reaches every other over NVLink through NVSwitch chips.
	InterconnectNVSwitch Interconnect = "nvswitch"
	// InterconnectPCIe: the GPUs only share PCIe; whether they can P2P is per type (PCIeP2P).
	InterconnectPCIe Interconnect = "pcie"
	// InterconnectNone: a single GPU, no intra-node peer.
	InterconnectNone Interconnect = "none"
)

// InstanceType holds what gpucluster needs to know about one EC2 GPU instance type.
// Field names say the unit. The catalog entries below cite their sources; the network-card
// figures are also checked against AWS's generated data in amazon-vpc-cni-k8s (instancetype_test.go).
type InstanceType struct {
	Name         string `json:"name"`
	GPUModel     string `json:"gpuModel"`
	GPUCount     int    `json:"gpuCount"`
	GPUMemoryGiB int    `json:"gpuMemoryGiBPerGpu"`
	// ComputeCapability is the GPU's CUDA architecture ([cuda-gpus]): which native code an image
	// must carry for it (sm_90 for 9.0).
	ComputeCapability string `json:"computeCapability"`
	VCPUs             int    `json:"vcpus"`
	MemoryGiB         int    `json:"memoryGiB"`
	LocalNVMeDisk     int    `json:"localNvmeDisks"`
	LocalNVMeGB       int    `json:"localNvmeGBPerDisk"`

	Interconnect Interconnect `json:"interconnect"`
	// NVLinkGeneration and NVLinkGBps (per GPU, bidirectional) are set for NVSwitch types only.
	NVLinkGeneration int `json:"nvlinkGeneration,omitempty"`
	NVLinkGBps       int `json:"nvlinkGBpsPerGpu,omitempty"`
	// PCIeP2P says whether NCCL can use GPU peer-to-peer between the GPUs of a PCIe-only type.
	// When false, intra-node traffic goes through host memory (NCCL's SHM transport).
	PCIeP2P bool `json:"pcieP2P"`
	// FabricManager: NVIDIA Fabric Manager must run (at the driver's exact version) before
	// NVLink through NVSwitch is usable; true on every NVSwitch type.
	FabricManager bool `json:"fabricManagerRequired"`

	EFA            bool `json:"efaSupported"`
	MaxEFA         int  `json:"maxEfaInterfaces"`
	NetworkCards   int  `json:"networkCards"`
	MaxENIsPerCard int  `json:"maxInterfacesPerCard"`
	// IPv4PerInterface is how many IPv4 addresses one interface holds, which the VPC CNI fills
	// for pods [karp-vpc]; 0 where no generated data has the type (p6e-gb200).
	IPv4PerInterface int  `json:"ipv4PerInterface,omitempty"`
	NetworkGbps      int  `json:"networkGbps"`
	GPUDirectRDMA    bool `json:"gpuDirectRdma"`
	NetworkBurstOnly bool `json:"networkBurstOnly,omitempty"` // "up to N Gbps": NetworkGbps is a burst figure
	// BaselineGbps is the bandwidth the instance sustains (EC2's baseline; Karpenter's generated
	// bandwidth table, which a test holds it to). It equals NetworkGbps except on burst types,
	// and it is what sustained NCCL traffic can expect.
	BaselineGbps float64 `json:"baselineGbps"`
	// OFITopologyFile: aws-ofi-nccl ships an NCCL topology file for the type and sets
	// NCCL_TOPO_FILE itself (its topology/ directory: p4d-24xl and p4de-24xl).
	OFITopologyFile bool `json:"ofiTopologyFile,omitempty"`
	// EFACards are the network cards that carry EFA, in the order gpucluster fills them; nil:
	// cards 0 to MaxEFA-1, the first beside the primary ENA interface on card 0. Types whose
	// card 0 is ENA-only (p6-b300), or whose EFA cards are not consecutive (p6e-gb200), list them.
	EFACards []int `json:"efaNetworkCards,omitempty"`
	// CPUArch is the Kubernetes architecture of the instance's CPUs (kubernetes.io/arch).
	CPUArch string `json:"cpuArchitecture"`
	// GPUCPUCoherent: the GPUs are coherent with a Grace CPU over NVLink-C2C. On such a platform
	// the NVIDIA driver lets a PCIe NIC (EFA) map GPU memory through dma-buf, as GPUDirect RDMA
	// over EFA does, only if the two share an IOMMU group (NVIDIA open-gpu-kernel-modules
	// kernel-open/nvidia/nv-pci.c, nv_pci_is_valid_topology_for_direct_pci), unless the module
	// option NVreg_GrdmaPciTopoCheckOverride=1 overrides the check (kernel-open/nvidia/nv-reg.h).
	GPUCPUCoherent bool `json:"gpuCpuCoherent,omitempty"`
	// UltraServerInstances are the instance counts of the UltraServers the type is sold in, whose
	// GPUs share one NVLink domain across instances (multi-node NVLink, reached through IMEX);
	// empty for types sold one instance at a time.
	UltraServerInstances []int `json:"ultraServerInstances,omitempty"`
	// NetworkNodeLayers is how many layers of network nodes EC2's instance topology
	// (DescribeInstanceTopology) reports for the type, each of which EKS puts on the node as
	// topology.k8s.aws/network-node-layer-<n> [ec2-topo]; 0: the type has none.
	NetworkNodeLayers int `json:"networkNodeLayers,omitempty"`
}

// CPU architectures, as Kubernetes names them (kubernetes.io/arch).
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// Sources used below (public pages, cited by short name):
//
//	[ec2-accel]  EC2 "Accelerated computing instance specifications"
//	             https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html
//	[ec2-net]    EC2 "Network specifications" (network cards, max interfaces)
//	             https://docs.aws.amazon.com/ec2/latest/instancetypes/ac.html#ac_network
//	[efa]        EC2 user guide, "Elastic Fabric Adapter" and "EFA for accelerated instance types"
//	             https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html
//	             https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html
//	[vpc-cni]    github.com/aws/amazon-vpc-cni-k8s v1.20.4 pkg/vpc/vpc_ip_resource_limit.go
//	             (generated from EC2 DescribeInstanceTypes; read by instancetype_test.go)
//	[karpenter]  github.com/aws/karpenter-provider-aws v1.15.2
//	             pkg/providers/instancetype/zz_generated.bandwidth.go (baseline Mbps)
//	[fm]         NVIDIA Fabric Manager user guide: required on HGX A100/H100/H200/B200 NVSwitch systems
//	             https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/
//	[nvlink]     NVIDIA NVLink/NVSwitch pages: NVLink3 600 GB/s (A100), NVLink4 900 GB/s (H100/H200),
//	             NVLink5 1.8 TB/s (B200) per GPU, bidirectional.
//	[field]      shared/DESIGN.md §1: g6e.12xlarge `nvidia-smi topo -m` shows NODE between GPUs,
//	             NCCL uses SHM.
//	[g5-p2p]     NVIDIA/TensorRT-LLM issue #1034: g5.48xlarge "peer access is not supported".
//	[ec2-topo]   EC2 user guide, "Prerequisites for Amazon EC2 instance topology": 3 network nodes
//	             for g6e.*, p4d, p4de, p5, p5e, p5en; 4 for p6-b200 (not g5, g6)
//	             https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html
//	[g6-p2p]     llm-d-incubation/llm-d-infra PR #181: AWS g6 has no NVLink and no PCIe P2P.
//	[cuda-gpus]  NVIDIA "CUDA GPUs - Compute Capability" (developer.nvidia.com/cuda-gpus): A100 8.0,
//	             A10G 8.6, L4 and L40S 8.9, H100 and H200 9.0, B200 and GB200 10.0, B300 10.3,
//	             RTX PRO 6000 Blackwell Server Edition 12.0.
//	[karp-ref]   karpenter-provider-aws website/content/en/preview/reference/instance-types.md at
//	             commit 692ccdd0 (v1.14.0), generated from EC2 DescribeInstanceTypes: GPU name,
//	             count and memory, vCPUs, memory, local NVMe total, max EFA, architecture.
//	[karp-vpc]   karpenter-provider-aws v1.15.2 pkg/providers/instancetype/zz_generated.vpclimits.go
//	             (network cards, interfaces per card; read by instancetype_test.go).
//	[eks-ami]    awslabs/amazon-eks-ami templates/al2023/runtime/gpu/nvidia-open-supported-devices-
//	             580.txt: the 580 driver of the pinned node images knows "NVIDIA B300 SXM6 AC",
//	             "NVIDIA GB200" and "NVIDIA RTX PRO 6000 Blackwell Server Edition" (570 knew neither
//	             the B300 nor the RTX PRO 6000).
//	[efa-b300]   EC2 user guide, "EFA for accelerated instance types", P6-B300: 17 network cards,
//	             card 0 ENA only, cards 1-16 EFA and ENA (aws/aws-parallelcluster#7143, AWS).
//	[efa-p6e]    EC2 user guide, "EFA for accelerated instance types", P6e-GB200: EFA-only at
//	             400 Gbps on odd cards 1-15, 200 Gbps ENA or EFA on even cards 2-16; cards {1,2},
//	             {3,4}... share a physical NIC; each GPU sends over two ({1,3}, {5,7}, {9,11},
//	             {13,15}). EKS user guide "ml-eks-nvidia-ultraserver": ENA on card 0 and EFA-only
//	             on cards 1, 5, 9, 13 (one NIC per GPU, 4 x 400 Gbps).
//	[eks-ultra]  EKS user guide, "ml-eks-nvidia-ultraserver": p6e-gb200.36xlarge, 4 Blackwell GPUs,
//	             sold only as UltraServers u-p6e-gb200x36 (9 instances) and u-p6e-gb200x72 (18);
//	             3 x 7.5 TB instance store; the AL2023 ARM NVIDIA image.
var catalog = []InstanceType{
	// p4d/p4de: [ec2-accel] 8 x A100, 96 vCPU, 1152 GiB, 8 x 1000 GB NVMe, 400 Gbps;
	// [efa] 4 EFA, GPUDirect RDMA; [vpc-cni] 4 cards x 15 interfaces; [nvlink] NVLink3; [fm].
	{Name: "p4d.24xlarge", GPUModel: "NVIDIA A100", ComputeCapability: "8.0", GPUCount: 8, GPUMemoryGiB: 40, VCPUs: 96, MemoryGiB: 1152,
		LocalNVMeDisk: 8, LocalNVMeGB: 1000, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 3, NVLinkGBps: 600,
		FabricManager: true, EFA: true, MaxEFA: 4, NetworkCards: 4, MaxENIsPerCard: 15, IPv4PerInterface: 50, NetworkGbps: 400, GPUDirectRDMA: true,
		OFITopologyFile: true, NetworkNodeLayers: 3},
	{Name: "p4de.24xlarge", GPUModel: "NVIDIA A100", ComputeCapability: "8.0", GPUCount: 8, GPUMemoryGiB: 80, VCPUs: 96, MemoryGiB: 1152,
		LocalNVMeDisk: 8, LocalNVMeGB: 1000, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 3, NVLinkGBps: 600,
		FabricManager: true, EFA: true, MaxEFA: 4, NetworkCards: 4, MaxENIsPerCard: 15, IPv4PerInterface: 50, NetworkGbps: 400, GPUDirectRDMA: true,
		OFITopologyFile: true, NetworkNodeLayers: 3},
	// p5/p5e: [ec2-accel] 8 x H100 80 GB / H200 141 GB, 192 vCPU, 2048 GiB, 8 x 3840 GB NVMe, 3200 Gbps;
	// [efa] 32 EFA; [vpc-cni] 32 cards x 2 interfaces; [nvlink] NVLink4; [fm].
	{Name: "p5.48xlarge", GPUModel: "NVIDIA H100", ComputeCapability: "9.0", GPUCount: 8, GPUMemoryGiB: 80, VCPUs: 192, MemoryGiB: 2048,
		LocalNVMeDisk: 8, LocalNVMeGB: 3840, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 4, NVLinkGBps: 900,
		FabricManager: true, EFA: true, MaxEFA: 32, NetworkCards: 32, MaxENIsPerCard: 2, IPv4PerInterface: 50, NetworkGbps: 3200, GPUDirectRDMA: true, NetworkNodeLayers: 3},
	{Name: "p5e.48xlarge", GPUModel: "NVIDIA H200", ComputeCapability: "9.0", GPUCount: 8, GPUMemoryGiB: 141, VCPUs: 192, MemoryGiB: 2048,
		LocalNVMeDisk: 8, LocalNVMeGB: 3840, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 4, NVLinkGBps: 900,
		FabricManager: true, EFA: true, MaxEFA: 32, NetworkCards: 32, MaxENIsPerCard: 2, IPv4PerInterface: 50, NetworkGbps: 3200, GPUDirectRDMA: true, NetworkNodeLayers: 3},
	// p5en: [ec2-accel] 8 x H200, 192 vCPU, 2048 GiB, 8 x 3840 GB NVMe, 3200 Gbps (EFAv3);
	// [efa] 16 EFA; [vpc-cni] 16 cards x 4 interfaces.
	{Name: "p5en.48xlarge", GPUModel: "NVIDIA H200", ComputeCapability: "9.0", GPUCount: 8, GPUMemoryGiB: 141, VCPUs: 192, MemoryGiB: 2048,
		LocalNVMeDisk: 8, LocalNVMeGB: 3840, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 4, NVLinkGBps: 900,
		FabricManager: true, EFA: true, MaxEFA: 16, NetworkCards: 16, MaxENIsPerCard: 4, IPv4PerInterface: 50, NetworkGbps: 3200, GPUDirectRDMA: true, NetworkNodeLayers: 3},
	// p6-b200: [ec2-accel] 8 x B200 179 GB, 192 vCPU, 2048 GiB, 8 x 3840 GB NVMe, 3200 Gbps (EFAv4);
	// [efa] 8 EFA; [vpc-cni] 8 cards x 4 interfaces; [nvlink] NVLink5.
	{Name: "p6-b200.48xlarge", GPUModel: "NVIDIA B200", ComputeCapability: "10.0", GPUCount: 8, GPUMemoryGiB: 179, VCPUs: 192, MemoryGiB: 2048,
		LocalNVMeDisk: 8, LocalNVMeGB: 3840, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 5, NVLinkGBps: 1800,
		FabricManager: true, EFA: true, MaxEFA: 8, NetworkCards: 8, MaxENIsPerCard: 4, IPv4PerInterface: 50, NetworkGbps: 3200, GPUDirectRDMA: true, NetworkNodeLayers: 4},

	// p5.4xlarge: [karp-ref] 1 x H100 80 GiB, 16 vCPU, 256 GiB, 3800 GB NVMe, 1 EFA; [karp-vpc] 1 card x
	// 4 interfaces; [karpenter] 100 Gbps; no GPUDirect RDMA (DescribeInstanceTypes, quoted in
	// NVIDIA/aicr#1256); not in [ec2-topo]'s list (only p5.48xlarge is).
	{Name: "p5.4xlarge", GPUModel: "NVIDIA H100", ComputeCapability: "9.0", GPUCount: 1, GPUMemoryGiB: 80, VCPUs: 16, MemoryGiB: 256,
		LocalNVMeDisk: 1, LocalNVMeGB: 3800, Interconnect: InterconnectNone,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 4, IPv4PerInterface: 30, NetworkGbps: 100},
	// p6-b300: [karp-ref] 8 x B300 268 GiB (275040 MiB), 192 vCPU, 4096 GiB, 30400 GB NVMe (8 x 3800),
	// 16 EFA; [karp-vpc] 17 cards x 4 interfaces; [efa-b300] card 0 ENA only; [karpenter] 6400 Gbps
	// (plus card 0's own ENA bandwidth); [nvlink] NVLink5; [fm] with the NVLink Subnet Manager
	// (fourth-generation NVSwitch, as p6-b200); [ec2-topo] 4 layers; [eks-ami] driver 580.
	{Name: "p6-b300.48xlarge", GPUModel: "NVIDIA B300", ComputeCapability: "10.3", GPUCount: 8, GPUMemoryGiB: 268, VCPUs: 192, MemoryGiB: 4096,
		LocalNVMeDisk: 8, LocalNVMeGB: 3800, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 5, NVLinkGBps: 1800,
		FabricManager: true, EFA: true, MaxEFA: 16, NetworkCards: 17, MaxENIsPerCard: 4, IPv4PerInterface: 50, NetworkGbps: 6400, GPUDirectRDMA: true,
		EFACards: cardRange(1, 16), NetworkNodeLayers: 4},
	// p6e-gb200: [eks-ultra] 4 x GB200 Blackwell GPUs per instance, arm64 (Grace), UltraServers of 9
	// or 18 instances whose 36 or 72 GPUs share one NVLink domain through the NVLink switch trays:
	// no fabric manager runs on the instance, IMEX does (set up per job by the NVIDIA DRA
	// driver's ComputeDomain). GPU memory 185 GiB, 144 vCPU and 960 GiB: AWS's P6e-GB200 product
	// page; no module generates them (Karpenter does not launch the type: it is absent from
	// [karp-vpc]). [efa-p6e] 17 cards, EFA-only on the odd ones; [karpenter] 3200 Gbps
	// (8 x 400); [ec2-topo] 3 layers.
	{Name: "p6e-gb200.36xlarge", GPUModel: "NVIDIA GB200", ComputeCapability: "10.0", GPUCount: 4, GPUMemoryGiB: 185, VCPUs: 144, MemoryGiB: 960,
		LocalNVMeDisk: 3, LocalNVMeGB: 7500, Interconnect: InterconnectNVSwitch, NVLinkGeneration: 5, NVLinkGBps: 1800,
		EFA: true, MaxEFA: 8, NetworkCards: 17, MaxENIsPerCard: 1, NetworkGbps: 3200, GPUDirectRDMA: true,
		EFACards: []int{1, 5, 9, 13, 3, 7, 11, 15}, CPUArch: ArchARM64, GPUCPUCoherent: true, UltraServerInstances: []int{9, 18}, NetworkNodeLayers: 3},

	// g6e: [ec2-accel] L40S 48 GB; EFA from 8xlarge up [efa]; no GPUDirect RDMA [efa];
	// cards and interfaces [vpc-cni]; bandwidth [ec2-accel] and [karpenter] baselines.
	// Multi-GPU sizes: [field] NODE topology, no P2P; NCCL falls back to SHM.
	{Name: "g6e.xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 1, GPUMemoryGiB: 48, VCPUs: 4, MemoryGiB: 32,
		LocalNVMeDisk: 1, LocalNVMeGB: 250, Interconnect: InterconnectNone,
		NetworkCards: 1, MaxENIsPerCard: 4, IPv4PerInterface: 15, NetworkGbps: 20, NetworkBurstOnly: true, BaselineGbps: 2.5, NetworkNodeLayers: 3},
	{Name: "g6e.2xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 1, GPUMemoryGiB: 48, VCPUs: 8, MemoryGiB: 64,
		LocalNVMeDisk: 1, LocalNVMeGB: 450, Interconnect: InterconnectNone,
		NetworkCards: 1, MaxENIsPerCard: 4, IPv4PerInterface: 15, NetworkGbps: 20, NetworkBurstOnly: true, BaselineGbps: 5, NetworkNodeLayers: 3},
	{Name: "g6e.4xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 1, GPUMemoryGiB: 48, VCPUs: 16, MemoryGiB: 128,
		LocalNVMeDisk: 1, LocalNVMeGB: 600, Interconnect: InterconnectNone,
		NetworkCards: 1, MaxENIsPerCard: 8, IPv4PerInterface: 30, NetworkGbps: 20, NetworkNodeLayers: 3},
	{Name: "g6e.8xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 1, GPUMemoryGiB: 48, VCPUs: 32, MemoryGiB: 256,
		LocalNVMeDisk: 1, LocalNVMeGB: 900, Interconnect: InterconnectNone,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 8, IPv4PerInterface: 30, NetworkGbps: 25, NetworkNodeLayers: 3},
	{Name: "g6e.12xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 4, GPUMemoryGiB: 48, VCPUs: 48, MemoryGiB: 384,
		LocalNVMeDisk: 2, LocalNVMeGB: 1900, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 10, IPv4PerInterface: 30, NetworkGbps: 100, NetworkNodeLayers: 3},
	{Name: "g6e.16xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 1, GPUMemoryGiB: 48, VCPUs: 64, MemoryGiB: 512,
		LocalNVMeDisk: 1, LocalNVMeGB: 1900, Interconnect: InterconnectNone,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 15, IPv4PerInterface: 50, NetworkGbps: 35, NetworkNodeLayers: 3},
	{Name: "g6e.24xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 4, GPUMemoryGiB: 48, VCPUs: 96, MemoryGiB: 768,
		LocalNVMeDisk: 2, LocalNVMeGB: 1900, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 2, NetworkCards: 2, MaxENIsPerCard: 10, IPv4PerInterface: 50, NetworkGbps: 200, NetworkNodeLayers: 3},
	{Name: "g6e.48xlarge", GPUModel: "NVIDIA L40S", ComputeCapability: "8.9", GPUCount: 8, GPUMemoryGiB: 48, VCPUs: 192, MemoryGiB: 1536,
		LocalNVMeDisk: 4, LocalNVMeGB: 1900, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 4, NetworkCards: 4, MaxENIsPerCard: 10, IPv4PerInterface: 50, NetworkGbps: 400, NetworkNodeLayers: 3},

	// g7e: [karp-ref] RTX PRO 6000 Blackwell Server Edition 96 GiB (98304 MiB), vCPUs, memory, NVMe
	// total and EFA (none below 8xlarge); [karp-vpc] cards and interfaces; [karpenter] bandwidth;
	// [ec2-topo] 3 layers; [eks-ami] driver 580. PCIe only: no NVLink, so no fabric manager. No
	// public source says whether its GPUs do PCIe peer-to-peer or GPUDirect RDMA over EFA, so the
	// catalog assumes neither (as on g6e) and the doctor reports what a run shows.
	{Name: "g7e.2xlarge", GPUModel: "NVIDIA RTX PRO 6000 Blackwell", ComputeCapability: "12.0", GPUCount: 1, GPUMemoryGiB: 96, VCPUs: 8, MemoryGiB: 64,
		LocalNVMeDisk: 1, LocalNVMeGB: 1900, Interconnect: InterconnectNone,
		NetworkCards: 1, MaxENIsPerCard: 4, IPv4PerInterface: 64, NetworkGbps: 50, NetworkNodeLayers: 3},
	{Name: "g7e.4xlarge", GPUModel: "NVIDIA RTX PRO 6000 Blackwell", ComputeCapability: "12.0", GPUCount: 1, GPUMemoryGiB: 96, VCPUs: 16, MemoryGiB: 128,
		LocalNVMeDisk: 1, LocalNVMeGB: 1900, Interconnect: InterconnectNone,
		NetworkCards: 1, MaxENIsPerCard: 8, IPv4PerInterface: 64, NetworkGbps: 50, NetworkNodeLayers: 3},
	{Name: "g7e.8xlarge", GPUModel: "NVIDIA RTX PRO 6000 Blackwell", ComputeCapability: "12.0", GPUCount: 1, GPUMemoryGiB: 96, VCPUs: 32, MemoryGiB: 256,
		LocalNVMeDisk: 1, LocalNVMeGB: 1900, Interconnect: InterconnectNone,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 8, IPv4PerInterface: 64, NetworkGbps: 100, NetworkNodeLayers: 3},
	{Name: "g7e.12xlarge", GPUModel: "NVIDIA RTX PRO 6000 Blackwell", ComputeCapability: "12.0", GPUCount: 2, GPUMemoryGiB: 96, VCPUs: 48, MemoryGiB: 512,
		LocalNVMeDisk: 1, LocalNVMeGB: 3800, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 10, IPv4PerInterface: 64, NetworkGbps: 400, NetworkNodeLayers: 3},
	{Name: "g7e.24xlarge", GPUModel: "NVIDIA RTX PRO 6000 Blackwell", ComputeCapability: "12.0", GPUCount: 4, GPUMemoryGiB: 96, VCPUs: 96, MemoryGiB: 1024,
		LocalNVMeDisk: 2, LocalNVMeGB: 3800, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 2, NetworkCards: 2, MaxENIsPerCard: 10, IPv4PerInterface: 64, NetworkGbps: 800, NetworkNodeLayers: 3},
	{Name: "g7e.48xlarge", GPUModel: "NVIDIA RTX PRO 6000 Blackwell", ComputeCapability: "12.0", GPUCount: 8, GPUMemoryGiB: 96, VCPUs: 192, MemoryGiB: 2048,
		LocalNVMeDisk: 4, LocalNVMeGB: 3800, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 4, NetworkCards: 4, MaxENIsPerCard: 10, IPv4PerInterface: 64, NetworkGbps: 1600, NetworkNodeLayers: 3},

	// g5.48xlarge: [ec2-accel] 8 x A10G 24 GB, 192 vCPU, 768 GiB, 2 x 3800 GB NVMe, 100 Gbps, 1 EFA,
	// no GPUDirect RDMA; [vpc-cni] 1 card x 7 interfaces; [g5-p2p] no P2P.
	{Name: "g5.48xlarge", GPUModel: "NVIDIA A10G", ComputeCapability: "8.6", GPUCount: 8, GPUMemoryGiB: 24, VCPUs: 192, MemoryGiB: 768,
		LocalNVMeDisk: 2, LocalNVMeGB: 3800, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 7, IPv4PerInterface: 50, NetworkGbps: 100},
	// g6.48xlarge: [ec2-accel] 8 x L4 24 GB, 192 vCPU, 768 GiB, 4 x 1880 GB NVMe, 100 Gbps, 1 EFA,
	// no GPUDirect RDMA; [vpc-cni] 1 card x 15 interfaces; [g6-p2p] no P2P.
	{Name: "g6.48xlarge", GPUModel: "NVIDIA L4", ComputeCapability: "8.9", GPUCount: 8, GPUMemoryGiB: 24, VCPUs: 192, MemoryGiB: 768,
		LocalNVMeDisk: 4, LocalNVMeGB: 1880, Interconnect: InterconnectPCIe,
		EFA: true, MaxEFA: 1, NetworkCards: 1, MaxENIsPerCard: 15, IPv4PerInterface: 50, NetworkGbps: 100},
}

// catalogByName indexes the catalog, filling the baseline of every type that does not burst:
// its one figure is both.
var catalogByName = func() map[string]InstanceType {
	m := make(map[string]InstanceType, len(catalog))
	for i := range catalog {
		if catalog[i].BaselineGbps == 0 {
			catalog[i].BaselineGbps = float64(catalog[i].NetworkGbps)
		}
		if catalog[i].CPUArch == "" {
			catalog[i].CPUArch = ArchAMD64 // [karp-ref]: every type here but p6e-gb200 is x86_64
		}
		m[catalog[i].Name] = catalog[i]
	}
	return m
}()

// LookupInstanceType returns the catalog entry for an EC2 instance type name.
func Lookup(name string) (InstanceType, bool) {
	t, ok := catalogByName[name]
	return t, ok
}

// InstanceTypes returns every catalog entry, sorted by name.
func All() []InstanceType {
	out := append([]InstanceType(nil), catalog...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// InstanceTypeNames returns the names of every catalog entry, sorted.
func Names() []string {
	names := make([]string, 0, len(catalog))
	for _, t := range All() {
		names = append(names, t.Name)
	}
	return names
}

// GPUsCanP2P says whether NCCL can move data GPU-to-GPU inside one instance (NVLink or PCIe P2P).
func (t InstanceType) GPUsCanP2P() bool {
	return t.Interconnect == InterconnectNVSwitch || (t.Interconnect == InterconnectPCIe && t.PCIeP2P)
}

// GbpsPerCard is the share of the sustained (baseline) bandwidth one EFA card carries. AWS spreads
// the aggregate evenly over the EFA cards on every multi-card type in this catalog (p5: 32 x 100
// Gbps; p6-b300: 16 x 400 beside card 0's ENA); a type without EFA has its one figure per card.
func (t InstanceType) GbpsPerCard() float64 {
	if t.MaxEFA > 0 {
		return t.BaselineGbps / float64(t.MaxEFA)
	}
	return t.BaselineGbps / float64(t.NetworkCards)
}

// EFANetworkCards are the cards the first n EFA interfaces go on (n at most MaxEFA).
func (t InstanceType) EFANetworkCards(n int) []int {
	cards := t.EFACards
	if cards == nil {
		cards = cardRange(0, t.MaxEFA)
	}
	return append([]int(nil), cards[:min(n, len(cards))]...)
}

// MultiNodeNVLink says whether the type's NVLink domain spans instances (an UltraServer).
func (t InstanceType) MultiNodeNVLink() bool { return len(t.UltraServerInstances) > 0 }

// cardRange is n consecutive card indexes from first.
func cardRange(first, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = first + i
	}
	return out
}

// InterconnectDescription says in words how the GPUs reach each other.
func (t InstanceType) InterconnectDescription() string {
	switch t.Interconnect {
	case InterconnectNVSwitch:
		return fmt.Sprintf("NVSwitch, NVLink%d, %d GB/s per GPU", t.NVLinkGeneration, t.NVLinkGBps)
	case InterconnectPCIe:
		if t.PCIeP2P {
			return "PCIe with GPU peer-to-peer"
		}
		return "PCIe without GPU peer-to-peer (NCCL uses host shared memory)"
	}
	return "single GPU"
}

func (t InstanceType) String() string {
	return fmt.Sprintf("%s (%d x %s)", t.Name, t.GPUCount, t.GPUModel)
}
