package topology

// DefaultShmSize is the /dev/shm size of training pods. The field experiments ran with 64Gi; the
// container default of 64Mi starves NCCL's SHM transport (shared/DESIGN.md §1).
const DefaultShmSize = "64Gi"

// base holds the defaults every built-in profile shares: the recommended shape of shared/DESIGN.md.
func base() Profile {
	return Profile{
		MinNodes: 2, MaxNodes: 2,
		Placement:     PlacementCluster,
		Fabric:        FabricEFA,
		PodLayout:     PodPerNode,
		Capacity:      CapacityOnDemand,
		Provisioner:   ProvisionerManagedNodeGroup,
		AMIFamily:     AMIAL2023NVIDIA,
		FabricManager: FabricManagerAuto,
		ShmSize:       DefaultShmSize,
	}
}

// builtins are the named profiles. They reproduce the field experiments of shared/DESIGN.md §1.
var builtins = func() map[string]Profile {
	with := func(name, desc string, edit func(*Profile)) Profile {
		p := base()
		p.Name, p.Description = name, desc
		edit(&p)
		return p
	}
	list := []Profile{
		with("p4d-efa", "p4d.24xlarge, 4 EFA, one pod per node holding all 8 GPUs (NVLink inside, GPUDirect RDMA between nodes)",
			func(p *Profile) { p.InstanceType = "p4d.24xlarge" }),
		// The field run: 4 pods x 1 GPU x 1 EFA on one p4d. Only 4 EFA devices exist, and each pod
		// needs its own, so 4 of the 8 GPUs stay idle: podsPerNode says so explicitly.
		with("p4d-pod-per-gpu", "p4d.24xlarge, one pod per GPU with one EFA each (4 pods: the field experiment; intra-node traffic leaves NVLink)",
			func(p *Profile) {
				p.InstanceType = "p4d.24xlarge"
				p.MinNodes, p.MaxNodes = 1, 1
				p.PodLayout, p.PodsPerNode = PodPerGPU, 4
			}),
		with("p5-efa", "p5.48xlarge, 32 EFA over 32 network cards, one pod per node",
			func(p *Profile) { p.InstanceType = "p5.48xlarge" }),
		with("g6e-efa", "4 x g6e.12xlarge (4 x L40S, SHM inside), 1 EFA each: the 2441 s field run",
			func(p *Profile) { p.InstanceType = "g6e.12xlarge"; p.MinNodes, p.MaxNodes = 4, 4 }),
		with("g6e-ena", "4 x g6e.12xlarge over plain ENA (NET/Socket): the 5408 s baseline, 2.2x slower than g6e-efa",
			func(p *Profile) {
				p.InstanceType = "g6e.12xlarge"
				p.MinNodes, p.MaxNodes = 4, 4
				p.Fabric = FabricENAOnly
			}),
		with("karpenter-p5", "p5.48xlarge pool provisioned by Karpenter, 0 to 4 nodes, 32 EFA, cluster placement group",
			func(p *Profile) {
				p.InstanceType = "p5.48xlarge"
				p.MinNodes, p.MaxNodes = 0, 4
				p.Provisioner = ProvisionerKarpenter
			}),
		with("p6-b300-efa", "2 x p6-b300.48xlarge (8 x B300, NVLink5), 16 EFA on cards 1-16 (card 0 is ENA only), one pod per node",
			func(p *Profile) { p.InstanceType = "p6-b300.48xlarge" }),
		with("g7e-efa", "2 x g7e.48xlarge (8 x RTX PRO 6000 Blackwell over PCIe), 4 EFA each, one pod per node",
			func(p *Profile) { p.InstanceType = "g7e.48xlarge" }),
		// EKS user guide, "Use P6e-GB200 UltraServers with Amazon EKS": Capacity Blocks, managed
		// node groups, the AL2023 ARM NVIDIA image, and EFA-only interfaces on cards 1, 5, 9 and
		// 13 (one 400 Gbps NIC per GPU). The stack names the Capacity Block's reservation.
		with("gb200-nvl72", "one u-p6e-gb200x72 UltraServer: 18 x p6e-gb200.36xlarge (72 GB200 GPUs in one NVLink domain, IMEX through the pool's ComputeDomain), 4 EFA each; Capacity Block",
			func(p *Profile) {
				p.InstanceType = "p6e-gb200.36xlarge"
				p.MinNodes, p.MaxNodes = 18, 18
				p.Capacity = CapacityCapacityBlock
				p.Placement = PlacementNone // the reservation places the UltraServer
				p.EFAInterfaces = 4
			}),
		with("dev", "one g6e.xlarge (1 x L40S, about 2 USD/h on demand) for trying the tool; no EFA, no placement group",
			func(p *Profile) {
				p.InstanceType = "g6e.xlarge"
				p.MinNodes, p.MaxNodes = 1, 1
				p.Fabric = FabricENAOnly
				p.Placement = PlacementNone
				p.ShmSize = "8Gi" // 32 GiB of host memory: 64Gi would not fit
			}),
	}
	m := make(map[string]Profile, len(list))
	for _, p := range list {
		m[p.Name] = p
	}
	return m
}()

// BuiltinProfile returns a copy of the named built-in profile.
func BuiltinProfile(name string) (Profile, bool) {
	p, ok := builtins[name]
	if !ok {
		return Profile{}, false
	}
	return p.clone(), true
}

// BuiltinProfileNames lists the built-in profiles, sorted.
func BuiltinProfileNames() []string { return sortedKeys(builtins) }
