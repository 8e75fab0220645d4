package topology

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// InvalidProfileError is returned by Derive for a profile that fails validation.
type InvalidProfileError struct {
	Profile  string
	Problems []Problem
}

func (e *InvalidProfileError) Error() string {
	msg := fmt.Sprintf("profile %q is invalid:", e.Profile)
	for _, p := range e.Problems {
		msg += fmt.Sprintf("\n  %s: %s; fix: %s", p.Key, p.Message, p.Fix)
	}
	return msg
}

// Derive turns one pool's profile into its cluster spec. It is pure: no cloud, no clock, no
// randomness; the same profile always gives the same spec. An invalid profile gives an
// *InvalidProfileError listing every problem.
func Derive(poolName string, p Profile) (PoolSpec, error) {
	if ps := Validate(p); len(ps) > 0 {
		return PoolSpec{}, &InvalidProfileError{Profile: poolName, Problems: ps}
	}
	it, _ := catalog.Lookup(p.InstanceType)
	efa := efaCount(p, it)
	nics, err := networkInterfaces(it, efa)
	if err != nil {
		return PoolSpec{}, err
	}

	spec := PoolSpec{
		Name:              poolName,
		Profile:           p.Name,
		Description:       p.Description,
		Instance:          it,
		Provisioner:       p.Provisioner,
		Scaling:           Scaling{MinNodes: p.MinNodes, MaxNodes: p.MaxNodes, DesiredNodes: max(p.MinNodes, 1), GPULimit: p.MaxNodes * it.GPUCount},
		AvailabilityZones: append([]string{}, p.AvailabilityZones...),
		Capacity: CapacitySpec{Type: p.Capacity, ReservationID: p.CapacityReservationID,
			NodeGroupType: nodeGroupCapacityType[p.Capacity], KarpenterType: karpenterCapacityType[p.Capacity],
			InstanceTypeInLaunchTemplate: p.Capacity == CapacityCapacityBlock},
		AMI:     deriveAMI(p, it),
		Storage: deriveStorage(p.AMIFamily),
		Network: NetworkSpec{
			Fabric: p.Fabric, EFAInterfaces: efa, Interfaces: nics,
			EFASecurityGroup: []SecurityGroupRule{}, SingleSubnet: efa > 0,
		},
		Placement:   derivePlacement(p, efa),
		Labels:      poolLabels(poolName, p),
		Taints:      poolTaints(p),
		Tolerations: poolTolerations(p),
	}
	if p.Provisioner == ProvisionerKarpenter {
		spec.Scaling.DesiredNodes = 0 // Karpenter launches for pending pods; there is no desired size
	}
	if efa > 0 {
		spec.Network.EFASecurityGroup = efaSecurityGroupRules()
	}
	spec.InCluster = deriveInCluster(poolName, p, it, efa)
	spec.StartupTaints = startupTaints()
	spec.HealthGate = deriveHealthGate(it, spec.InCluster.FabricManager, efa, p.AMIFamily)
	spec.TrainingPod = deriveTrainingPod(p, it, efa, spec.InCluster.NodeSelector, spec.Tolerations)
	if it.MultiNodeNVLink() {
		cd := poolComputeDomain(spec)
		spec.TrainingPod.ComputeDomain = &cd
	}
	intra, inter := expectedTransports(p, it, spec.TrainingPod)
	gbps, note := expectedBandwidth(it, spec.TrainingPod.PodsPerNode*spec.TrainingPod.EFAPerPod)
	spec.NCCL = NCCLExpectation{IntraNode: intra, InterNode: inter, ExpectedInterNodeGbps: gbps, PhysicalMaxGbps: it.NetworkGbps, BandwidthNote: note}
	spec.Findings = deriveFindings(p, it, spec)
	return spec, nil
}

// derivePlacement decides the placement group. Reserved capacity (ODCR, Capacity Block) is
// already placed by AWS: a new cluster group would force launches into capacity that is not
// there, and fail with InsufficientInstanceCapacity.
func derivePlacement(p Profile, efa int) PlacementSpec {
	if p.PlacementGroupName != "" { // an ODCR made in a cluster placement group (validateReservationGroup)
		return PlacementSpec{Strategy: PlacementCluster, Group: p.PlacementGroupName, Reason: fmt.Sprintf(
			"the reservation %s was made in cluster placement group %s, and only instances launched into that group use it "+
				"(EC2 user guide, capacity-reservations-launch: choose the cluster placement group, then the reservation): "+
				"the pool launches there, in %s, which must be the zone of the reservation and its group; gpucluster neither creates nor deletes the group",
			p.CapacityReservationID, p.PlacementGroupName, zoneOrReservations(p.AvailabilityZones))}
	}
	if p.Capacity.Reserved() {
		return PlacementSpec{Strategy: PlacementNone, Reason: fmt.Sprintf(
			"%s %s is already placed by AWS; a placement group on top would cause insufficient-capacity launches", p.Capacity, p.CapacityReservationID)}
	}
	switch p.Placement {
	case PlacementCluster:
		why := "cluster placement group in one Availability Zone: lowest latency and full bandwidth between nodes"
		if efa > 0 {
			why = "EFA pool: " + why
		}
		return PlacementSpec{Strategy: PlacementCluster, Reason: why}
	case PlacementPartition:
		return PlacementSpec{Strategy: PlacementPartition, Partitions: p.Partitions,
			Reason: fmt.Sprintf("partition placement group with %d partitions: nodes spread over racks that share no hardware", p.Partitions)}
	}
	why := "no placement group, as the profile says"
	if efa > 0 {
		why += "; EFA nodes may land far apart"
	}
	return PlacementSpec{Strategy: PlacementNone, Reason: why}
}

// zoneOrReservations names a pool's one zone, or the reservation's before the stack gives one.
func zoneOrReservations(zones []string) string {
	if len(zones) == 0 {
		return "the reservation's Availability Zone"
	}
	return strings.Join(zones, ", ")
}

func deriveInCluster(poolName string, p Profile, it catalog.InstanceType, efa int) InClusterSpec {
	in := InClusterSpec{NodeSelector: map[string]string{LabelPool: poolName}}
	if p.AMIFamily.ShipsNVIDIADevicePlugin() {
		in.NVIDIADevicePlugin = Decision{false, "the Bottlerocket NVIDIA image runs the NVIDIA device plugin itself"}
	} else {
		in.NVIDIADevicePlugin = Decision{true, fmt.Sprintf("advertises the %d %s GPUs as %s", it.GPUCount, it.GPUModel, ResourceGPU)}
	}
	if efa > 0 {
		in.EFADevicePlugin = Decision{true, fmt.Sprintf("advertises the %d EFA interfaces as %s; tolerates the GPU taint", efa, ResourceEFA)}
		in.EFANodeSelector = map[string]string{LabelEFA: "true"}
	} else {
		in.EFADevicePlugin = Decision{false, "no EFA interfaces in this pool"}
	}
	in.DRADriver = deriveDRADriver(it)
	in.FabricManager = deriveFabricManager(p, it)
	// NVIDIA's driver container starts NVLSM with fabric manager on NVLink 5 systems
	// (gpu-driver-container nvidia-driver: "Detected NVLink5+ system"); the EKS AL2023 NVIDIA image
	// installs nvlsm for them (amazon-eks-ami install-nvidia-driver.sh).
	in.FabricManager.NVLinkSubnetManager = in.FabricManager.Required && it.NVLinkGeneration >= 5
	return in
}

func deriveFabricManager(p Profile, it catalog.InstanceType) FabricManagerDecision {
	if !it.FabricManager {
		why := fmt.Sprintf("%s has no NVSwitch: its GPUs share PCIe only", it.Name)
		switch {
		case it.MultiNodeNVLink():
			why = fmt.Sprintf("%s's NVSwitches are in the UltraServer's NVLink switch trays, which manage the fabric themselves; the nodes run IMEX instead (the DRA driver's ComputeDomains)", it.Name)
		case it.GPUCount == 1:
			why = fmt.Sprintf("%s has a single GPU and no NVSwitch", it.Name)
		}
		return FabricManagerDecision{RunBy: FabricManagerNotNeeded, Reason: why}
	}
	switch {
	case p.FabricManager == FabricManagerDaemonSet:
		return FabricManagerDecision{Required: true, RunBy: FabricManagerRunByDaemonSet, Deploy: true,
			Reason: "fabricManager: daemonset: a privileged DaemonSet runs it at the node driver's version"}
	case p.FabricManager == FabricManagerHost:
		return FabricManagerDecision{Required: true, RunBy: FabricManagerRunByHost,
			Reason: "fabricManager: host: the image must run nv-fabricmanager at its driver's version, or NVLink stays unusable (CUDA error 802)"}
	case p.AMIFamily.RunsHostFabricManager():
		return FabricManagerDecision{Required: true, RunBy: FabricManagerRunByHost,
			Reason: fmt.Sprintf("auto: the %s image runs nv-fabricmanager on the host; a DaemonSet would conflict with it", p.AMIFamily)}
	default:
		return FabricManagerDecision{Required: true, RunBy: FabricManagerRunByDaemonSet, Deploy: true,
			Reason: "auto: a custom image is not known to run nv-fabricmanager, so a DaemonSet runs it (set fabricManager: host if the image does)"}
	}
}

// podsPerNode is how many training pods share a node: one, or one per GPU (podsPerNode of them).
func podsPerNode(p Profile, it catalog.InstanceType) int {
	switch {
	case p.PodLayout != PodPerGPU:
		return 1
	case p.PodsPerNode > 0:
		return p.PodsPerNode
	}
	return it.GPUCount
}

func deriveTrainingPod(p Profile, it catalog.InstanceType, efa int, selector map[string]string, tols []Toleration) TrainingPodSpec {
	pods, gpus, efaPerPod := podsPerNode(p, it), it.GPUCount, efa
	if p.PodLayout == PodPerGPU {
		gpus, efaPerPod = 1, efa/pods
	}
	shm := resource.MustParse(p.ShmSize) // validated
	cpu, memory := trainingPodCPUMemory(it, pods, p.Provisioner)
	pod := TrainingPodSpec{
		CPU: cpu.String(), Memory: memory.String(),
		Layout: p.PodLayout, PodsPerNode: pods, GPUsPerPod: gpus, EFAPerPod: efaPerPod,
		IdleGPUsPerNode: it.GPUCount - pods*gpus,
		Resources:       map[string]int{ResourceGPU: gpus},
		// The field ran its multi-GPU pods in the node's IPC namespace (shared/DESIGN.md §1). A
		// one-GPU pod shares nothing over IPC: NCCL takes each pod for a host of its own and
		// reaches the others over the network, so it stays in its own namespace.
		HostIPC: gpus > 1,
		// hostNetwork would clash ports between pods and needs ClusterFirstWithHostNet DNS; the
		// pod network is enough because NCCL's data path is EFA (OS bypass), not the pod IP.
		HostNetwork:  false,
		DNSPolicy:    "ClusterFirst",
		Capabilities: []string{"IPC_LOCK"},
		ShmSize:      p.ShmSize, ShmSizeBytes: shm.Value(),
		NodeSelector: cloneMap(selector),
		Tolerations:  append([]Toleration(nil), tols...),
		Env:          trainingEnv(p, it),
	}
	if efaPerPod > 0 {
		pod.Resources[ResourceEFA] = efaPerPod
		pod.PluginManagedEnv = pluginManagedEnv(it)
	}
	return pod
}

func deriveFindings(p Profile, it catalog.InstanceType, spec PoolSpec) []Finding {
	fs := []Finding{}
	efa := spec.Network.EFAInterfaces
	if efa > 0 && spec.Placement.Strategy == PlacementNone && !p.Capacity.Reserved() {
		fs = append(fs, Finding{SeverityWarning, "efa-without-placement-group",
			"EFA pool without a placement group: nodes may land far apart, adding latency to every collective"})
	}
	if p.PodLayout == PodPerGPU && it.Interconnect == catalog.InterconnectNVSwitch && spec.TrainingPod.PodsPerNode > 1 {
		fs = append(fs, Finding{SeverityWarning, "pod-per-gpu-on-nvswitch",
			fmt.Sprintf("one pod per GPU on %s: intra-node traffic leaves NVLink (%d GB/s per GPU) for the network", it.Name, it.NVLinkGBps)})
	}
	if idle := spec.TrainingPod.IdleGPUsPerNode; idle > 0 {
		fs = append(fs, Finding{SeverityWarning, "idle-gpus",
			fmt.Sprintf("%d of %d GPUs per node stay idle: %d pods x %d GPU", idle, it.GPUCount, spec.TrainingPod.PodsPerNode, spec.TrainingPod.GPUsPerPod)})
	}
	if used := spec.TrainingPod.PodsPerNode * spec.TrainingPod.EFAPerPod; efa > 0 && used < efa {
		fs = append(fs, Finding{SeverityWarning, "efa-unassigned",
			fmt.Sprintf("%d of %d EFA devices per node are granted to no pod: %d pods x %d EFA", efa-used, efa, spec.TrainingPod.PodsPerNode, spec.TrainingPod.EFAPerPod)})
	}
	if efa > 0 && efa < it.MaxEFA {
		fs = append(fs, Finding{SeverityInfo, "efa-below-max",
			fmt.Sprintf("%d of %d possible EFA interfaces: inter-node bandwidth is capped at %g of %d Gbps", efa, it.MaxEFA, spec.NCCL.ExpectedInterNodeGbps, it.NetworkGbps)})
	}
	if p.Fabric == FabricENAOnly && it.EFA && it.GPUCount > 1 {
		fs = append(fs, Finding{SeverityInfo, "efa-unused",
			fmt.Sprintf("%s supports EFA but the pool uses plain ENA: inter-node collectives run over TCP (field: 2.2x slower on g6e.12xlarge)", it.Name)})
	}
	// A managed node group's size changes only when someone sets it: gpucluster deploys no
	// Cluster Autoscaler. A range would otherwise read as autoscaling.
	if s := spec.Scaling; p.Provisioner == ProvisionerManagedNodeGroup && s.MinNodes < s.MaxNodes {
		fs = append(fs, Finding{SeverityWarning, "no-autoscaler",
			fmt.Sprintf("managed node group of %d to %d nodes runs %d: nothing gpucluster deploys scales it (no Cluster Autoscaler); change desiredSize with aws eks update-nodegroup-config, or use provisioner: karpenter to scale from zero on pending pods",
				s.MinNodes, s.MaxNodes, s.DesiredNodes)})
	}
	if p.Capacity == CapacitySpot && efa > 0 {
		fs = append(fs, Finding{SeverityInfo, "spot-efa",
			"spot capacity for a tightly coupled EFA pool: one reclaimed node stops the whole job"})
	}
	return append(fs, ncclEnvFindings(p, it)...)
}
