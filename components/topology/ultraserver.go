package topology

import (
	"fmt"
	"slices"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// GB200 NVL72 UltraServers (p6e-gb200) on EKS. Sources:
//
//	[eks-ultra]  EKS user guide, "Use P6e-GB200 UltraServers with Amazon EKS"
//	             (ml-eks-nvidia-ultraserver): Kubernetes 1.33 and above; DRA is required, and DRA
//	             is not supported in Karpenter or EKS Auto Mode (managed or self-managed node
//	             groups); capacity through EC2 Capacity Blocks for ML; the AL2023 ARM NVIDIA image;
//	             the NVIDIA DRA driver with gpus disabled and ComputeDomains enabled; "It is a best
//	             practice to create a ComputeDomain per workload job".
//	[dra-driver] kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 (formerly NVIDIA/k8s-dra-driver-gpu;
//	             module sigs.k8s.io/dra-driver-nvidia-gpu): ComputeDomain resource.nvidia.com/v1beta1,
//	             spec.channel.resourceClaimTemplate.name; the DeviceClasses
//	             compute-domain-daemon.nvidia.com and compute-domain-default-channel.nvidia.com.
//	[eks-dra]    EKS user guide, "Install the NVIDIA DRA driver" (device-management-nvidia-dra-
//	             device-plugin, with chart 0.4.1): "Minimum Kubernetes version | 1.34"; the
//	             driver's own docs/prerequisites.md (v0.4.1): "Kubernetes | v1.34.2 or later"
//	             (DRA on by default from 1.34; "Not all providers support enabling
//	             DynamicResourceAllocation on v1.32 or v1.33 clusters"). [eks-ultra] still says
//	             1.33, for the older chart nvidia-dra-driver-gpu 25.8.0 it pins.
//	[aws-gb200]  awslabs/awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/
//	             nccl-tests-gb200.yaml (commit a59b4db5): a ComputeDomain per job, each worker
//	             claiming its channel, NCCL_MNNVL_ENABLE=1 and NCCL_NVLS_ENABLE=1.

// MinUltraServerKubernetesMinor is the oldest Kubernetes version an UltraServer pool runs on here:
// EKS runs UltraServers from 1.33 [eks-ultra], but the DRA driver gpucluster pins, which their
// NVLink domains need, from 1.34 [eks-dra].
const MinUltraServerKubernetesMinor = 34

// ComputeDomain API names [dra-driver], shared by the DRA driver component, the pod template and
// the tests.
const (
	ComputeDomainAPIVersion = "resource.nvidia.com/v1beta1"
	ComputeDomainKind       = "ComputeDomain"
	// ComputeDomainClaim is the name a pod gives its claim on the domain's IMEX channel, and the
	// training container's resources.claims entry.
	ComputeDomainClaim = "compute-domain-channel"
	// ComputeDomainChannelDeviceClass is the DeviceClass of the claim template the ComputeDomain
	// controller makes for a domain's workload pods (cmd/compute-domain-controller/computedomain.go
	// computeDomainDefaultChannelDeviceClass, templates/compute-domain-workload-claim-template).
	ComputeDomainChannelDeviceClass = "compute-domain-default-channel.nvidia.com"
	// ComputeDomainStatusReady is a domain's status once all its IMEX daemons run
	// (api/nvidia.com/resource/v1beta1/computedomain.go, ComputeDomainStatusReady).
	ComputeDomainStatusReady = "Ready"
)

// ComputeDomainSpec is an NVLink domain: the ComputeDomain object, whose controller makes the
// ResourceClaimTemplate pods claim their IMEX channel from.
type ComputeDomainSpec struct {
	Name          string `json:"name"`
	ClaimTemplate string `json:"resourceClaimTemplate"`
	// NumNodes is the nodes the domain spans (elastic from driver 25.8 on; set as AWS's example does).
	NumNodes int `json:"numNodes"`
}

// poolComputeDomain is the pool's ComputeDomain, which gpucluster creates with the cluster and
// every job on the pool claims (the training pod template, the benchmark). The EKS user guide
// advises a domain per job [eks-ultra]; a pool's domain instead exists, with its claim template,
// before any job is applied, so no job races the controller that makes the template, and the
// pool, one UltraServer, runs one job at a time.
func poolComputeDomain(pool PoolSpec) ComputeDomainSpec {
	name := pool.Name + "-compute-domain"
	return ComputeDomainSpec{Name: name, ClaimTemplate: name + "-channel", NumNodes: pool.Scaling.DesiredNodes}
}

// mnnvlEnv is what a job on an UltraServer sets so that NCCL fails rather than falls back to EFA
// when multi-node NVLink or NVLink SHARP is not working ([aws-gb200] sets both; NCCL's default,
// 2, would quietly use the network instead).
var mnnvlEnv = map[string]string{"NCCL_MNNVL_ENABLE": "1", "NCCL_NVLS_ENABLE": "1"}

// validateUltraServer refuses what EKS refuses for a type sold only as UltraServers [eks-ultra].
func validateUltraServer(ps *problems, p Profile, it catalog.InstanceType) {
	if !it.MultiNodeNVLink() {
		return
	}
	if p.Provisioner != ProvisionerManagedNodeGroup {
		ps.add("provisioner", "use provisioner: managed-node-group",
			"%s needs Dynamic Resource Allocation for its NVLink domain, which EKS does not support with Karpenter (EKS user guide, P6e-GB200 UltraServers)", it.Name)
	}
	if p.Capacity != CapacityCapacityBlock {
		ps.add("capacity", "set capacity: capacity-block and capacityReservationId to the UltraServer Capacity Block's reservation",
			"%s is sold only as UltraServers, through EC2 Capacity Blocks for ML; capacity %s cannot launch it", it.Name, p.Capacity)
	}
	if p.AMIFamily == AMIBottlerocketNVIDIA {
		ps.add("amiFamily", "use amiFamily: al2023-nvidia (EKS picks its ARM NVIDIA variant), or a custom arm64 image with the IMEX driver",
			"EKS runs %s on the AL2023 ARM NVIDIA image, which carries the IMEX driver and the NVLink Subnet Manager", it.Name)
	}
	if p.MinNodes != p.MaxNodes || !slices.Contains(it.UltraServerInstances, p.MaxNodes) {
		ps.add("nodes", fmt.Sprintf("set nodes to one of %v (a whole UltraServer); for more UltraServers, add a pool per UltraServer", it.UltraServerInstances),
			"a %s pool is one UltraServer, one NVLink domain: %s nodes is not a whole UltraServer", it.Name, nodeRange(p.MinNodes, p.MaxNodes))
	}
	if p.PodLayout == PodPerGPU {
		ps.add("podLayout", "use podLayout: pod-per-node",
			"on %s each pod claims the node's IMEX channel from its job's ComputeDomain, and a node has one: one pod per node", it.Name)
	}
}

// deriveDRADriver decides the NVIDIA DRA driver: on pools whose NVLink domain spans instances,
// for its ComputeDomains (IMEX); elsewhere the device plugin is all the GPUs need.
func deriveDRADriver(it catalog.InstanceType) Decision {
	if !it.MultiNodeNVLink() {
		return Decision{false, "the NVLink domain is the instance: no ComputeDomain needed"}
	}
	return Decision{true, fmt.Sprintf("a job's GPUs across the UltraServer (%v instances) share NVLink only inside a ComputeDomain, whose IMEX daemons the NVIDIA DRA driver runs", it.UltraServerInstances)}
}
