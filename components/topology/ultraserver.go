package topology

import (
	"fmt"
	"slices"
	"strings"

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
//	[aws-gb200]  awslabs/awsome-distributed-training micro-benchmarks/nccl-tests/kubernetes/
//	             nccl-tests-gb200.yaml (commit a59b4db5): a ComputeDomain per job, each worker
//	             claiming its channel, NCCL_MNNVL_ENABLE=1 and NCCL_NVLS_ENABLE=1.

// MinUltraServerKubernetesMinor is the oldest Kubernetes version EKS runs UltraServers on [eks-ultra].
const MinUltraServerKubernetesMinor = 33

// ComputeDomain API names [dra-driver], shared by the job objects (benchjobs), the pod template
// and the tests.
const (
	ComputeDomainAPIVersion = "resource.nvidia.com/v1beta1"
	ComputeDomainKind       = "ComputeDomain"
	// ComputeDomainClaim is the name a pod gives its claim on the domain's IMEX channel, and the
	// training container's resources.claims entry.
	ComputeDomainClaim = "compute-domain-channel"
)

// ComputeDomainSpec is an NVLink domain: the ComputeDomain object, whose controller makes the
// ResourceClaimTemplate pods claim their IMEX channel from.
type ComputeDomainSpec struct {
	Name          string `json:"name"`
	ClaimTemplate string `json:"resourceClaimTemplate"`
	// NumNodes is the nodes the domain spans (elastic from driver 25.8 on; set as AWS's example does).
	NumNodes int `json:"numNodes"`
}

// PoolComputeDomain is the pool's ComputeDomain, which gpucluster creates with the cluster and
// every job on the pool claims (the training pod template, the benchmark). The EKS user guide
// advises a domain per job [eks-ultra]; a pool's domain instead exists, with its claim template,
// before any job is applied, so no job races the controller that makes the template, and the
// pool, one UltraServer, runs one job at a time.
func PoolComputeDomain(pool PoolSpec) ComputeDomainSpec {
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

// nodeGroupAMITypes are the EKS node group AMI types of each image family by CPU architecture
// (EKS API CreateNodegroup, amiType: AL2023_ARM_64_NVIDIA for Graviton and Grace GPU nodes).
var nodeGroupAMITypes = map[AMIFamily]map[string]string{
	AMIAL2023NVIDIA:       {catalog.ArchAMD64: "AL2023_x86_64_NVIDIA", catalog.ArchARM64: "AL2023_ARM_64_NVIDIA"},
	AMIBottlerocketNVIDIA: {catalog.ArchAMD64: "BOTTLEROCKET_x86_64_NVIDIA", catalog.ArchARM64: "BOTTLEROCKET_ARM_64_NVIDIA"},
	AMICustom:             {catalog.ArchAMD64: "CUSTOM", catalog.ArchARM64: "CUSTOM"},
}

// deriveDRADriver decides the NVIDIA DRA driver: on pools whose NVLink domain spans instances,
// for its ComputeDomains (IMEX); elsewhere the device plugin is all the GPUs need.
func deriveDRADriver(it catalog.InstanceType) Decision {
	if !it.MultiNodeNVLink() {
		return Decision{false, "the NVLink domain is the instance: no ComputeDomain needed"}
	}
	return Decision{true, fmt.Sprintf("a job's GPUs across the UltraServer (%v instances) share NVLink only inside a ComputeDomain, whose IMEX daemons the NVIDIA DRA driver runs", it.UltraServerInstances)}
}

// checkArchitectures refuses what a stack-wide setting makes impossible for a pool: an
// UltraServer pool on a Kubernetes version EKS does not run it on [eks-ultra], a GPU the default
// training image has no code for, and the default image (CUDA 13) on a custom image's older driver.
func checkArchitectures(spec StackSpec, st Stack) error {
	var errs ConfigErrors
	for _, p := range spec.Pools {
		if p.Instance.MultiNodeNVLink() {
			if m := versionPattern.FindStringSubmatch(spec.Cluster.KubernetesVersion); m != nil && atoi(m[1]) < MinUltraServerKubernetesMinor {
				errs = append(errs, ConfigError{File: st.File, Line: st.versionLine, Key: KeyKubernetesVersion,
					Message: fmt.Sprintf("pool %s (%s) needs Kubernetes 1.%d or newer: EKS runs UltraServers from 1.%d, with Dynamic Resource Allocation; the stack asks for %s",
						p.Name, p.Instance.Name, MinUltraServerKubernetesMinor, MinUltraServerKubernetesMinor, spec.Cluster.KubernetesVersion),
					Fix: fmt.Sprintf("set %s to 1.%d or newer (default %s)", KeyKubernetesVersion, MinUltraServerKubernetesMinor, DefaultKubernetesVersion)})
			}
		}
		if spec.TrainingImage != DefaultTrainingImage {
			continue // the stack's own image: what it was built for is the stack's to know
		}
		if cc := p.Instance.ComputeCapability; !slices.Contains(DefaultImageComputeCapabilities, cc) {
			errs = append(errs, ConfigError{File: st.File, Line: st.imageLine, Key: KeyTrainingImage,
				Message: fmt.Sprintf("pool %s runs %s GPUs (compute capability %s), and the default training image carries code for %v only, with no PTX to compile from: NCCL and nccl-tests would find no kernel to run",
					p.Name, p.Instance.GPUModel, cc, DefaultImageComputeCapabilities),
				Fix: fmt.Sprintf("set %s to an image whose NCCL and nccl-tests are built for sm_%s", KeyTrainingImage, strings.ReplaceAll(cc, ".", ""))})
		}
		if p.AMI.Family == AMICustom {
			if major := atoi(strings.SplitN(spec.NVIDIADriverVersion, ".", 2)[0]); major < minCUDA13Driver {
				errs = append(errs, ConfigError{File: st.File, Line: st.imageLine, Key: KeyTrainingImage,
					Message: fmt.Sprintf("pool %s's custom image has NVIDIA driver %s, and the default training image is built with CUDA 13, which needs driver %d or newer",
						p.Name, spec.NVIDIADriverVersion, minCUDA13Driver),
					Fix: fmt.Sprintf("set %s to an image built with the CUDA your driver runs, or move the custom image to driver %d+ (and %s with it)", KeyTrainingImage, minCUDA13Driver, KeyNVIDIADriverVersion)})
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}
