package topology

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// What the kubelet of an EKS node keeps for itself, per the EKS AL2023 node bootstrap (nodeadm,
// the same formulas as amazon-eks-ami's bootstrap.sh before it):
//   - kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the third and fourth,
//     0.25% of every further core;
//   - kube-reserved memory: 255 MiB + 11 MiB per pod the node may run, with max pods capped at 110
//     below 30 vCPUs and 250 from 30 (taking the cap over-reserves on small types: safe);
//   - eviction threshold: memory.available < 100 MiB.
const (
	kubeReservedMemoryBaseMiB = 255
	kubeReservedMemoryPerPod  = 11
	evictionHardMiB           = 100
)

// usableMemoryFraction: the kernel and firmware take part of the nominal memory before the
// kubelet sees it (MemTotal is 2–4% below the instance's advertised GiB).
const usableMemoryFraction = 0.95

// daemonSetCPUMillis and daemonSetMemoryMiB leave room for the DaemonSets every GPU node runs:
// the VPC CNI, kube-proxy, the EKS Pod Identity agent, the device plugins and fabric manager
// (their requests add up to well under this).
const (
	daemonSetCPUMillis = 1000
	daemonSetMemoryMiB = 2048
)

func maxPods(vcpus int) int {
	if vcpus < 30 {
		return 110
	}
	return 250
}

// kubeReservedCPUMillis is EKS's tiered CPU reservation.
func kubeReservedCPUMillis(vcpus int) float64 {
	tiers := []struct {
		cores    int
		fraction float64
	}{{1, 0.06}, {1, 0.01}, {2, 0.005}, {1 << 20, 0.0025}}
	left, m := vcpus, 0.0
	for _, t := range tiers {
		n := min(left, t.cores)
		m += float64(n) * 1000 * t.fraction
		left -= n
	}
	return m
}

// trainingPodCPUMemory is what each training pod requests and is limited to: the node's
// allocatable (after kube-reserved, eviction and the DaemonSets) split between its pods, rounded
// down to whole cores and GiB. Requests equal limits, so the pod is Guaranteed: the last the
// kubelet evicts under memory pressure, and eligible for exclusive cores under the static CPU
// manager. /dev/shm is memory-backed and counts within this memory.
//
// On a Karpenter pool the memory is also bounded by what Karpenter expects the type to offer
// before it has seen one (karpenterLaunchMemoryMiB): Karpenter launches a node only for pods it
// computes will fit, and a pod sized to the kubelet's real figure asks for more than that
// estimate, so Karpenter would launch nothing for it and the job would wait for ever.
func trainingPodCPUMemory(it catalog.InstanceType, pods int, provisioner Provisioner) (cpu, memory resource.Quantity) {
	cpuMillis, memMiB := nodeAllocatable(it)
	if provisioner == ProvisionerKarpenter {
		memMiB = min(memMiB, karpenterLaunchMemoryMiB(it))
	}
	cpuMillis -= daemonSetCPUMillis
	memMiB -= daemonSetMemoryMiB
	cores := int64(cpuMillis/1000) / int64(pods)
	gib := int64(memMiB/1024) / int64(pods)
	return resource.MustParse(fmt.Sprint(max(cores, 1))), resource.MustParse(fmt.Sprintf("%dGi", max(gib, 1)))
}

// nodeAllocatable is the CPU (millicores) and memory (MiB) a node of the type offers pods:
// capacity less kube-reserved and the eviction threshold.
func nodeAllocatable(it catalog.InstanceType) (cpuMillis, memMiB float64) {
	cpuMillis = float64(it.VCPUs)*1000 - kubeReservedCPUMillis(it.VCPUs)
	memMiB = float64(it.MemoryGiB)*1024*usableMemoryFraction -
		float64(kubeReservedMemoryBaseMiB+kubeReservedMemoryPerPod*maxPods(it.VCPUs)+evictionHardMiB)
	return cpuMillis, memMiB
}

// karpenterVMMemoryOverhead is the share of an instance type's memory Karpenter assumes the
// hypervisor and kernel take until it has seen a node of the type (karpenter-provider-aws v1.15.2
// pkg/operator/options/options.go, VM_MEMORY_OVERHEAD_PERCENT, default 0.075). A real EKS AL2023
// p4d.24xlarge reports 1176300008Ki of its 1152 GiB, 2.6% less (kubectl describe node in
// gnosia93/training-on-eks chapter/c8-scheduling-evit.md): the estimate is the lower figure.
const karpenterVMMemoryOverhead = 0.075

// karpenterLaunchMemoryMiB is the allocatable memory Karpenter computes for a type it has not yet
// launched (pkg/providers/instancetype/types.go memory(): the type's MiB, 64 fewer on arm64, less
// the overhead rounded up; then the same kube-reserved memory and eviction threshold as the node,
// for the pods its ENIs hold, ENILimitedPods: interfaces of the default card × (IPv4 addresses per
// interface − 1) + 2, as the EC2NodeClass sets no maxPods: 737 on p4d.24xlarge, as the real node
// above reports).
func karpenterLaunchMemoryMiB(it catalog.InstanceType) float64 {
	size := float64(it.MemoryGiB) * 1024
	if it.CPUArch == catalog.ArchARM64 {
		size -= 64
	}
	size -= math.Ceil(size * karpenterVMMemoryOverhead)
	pods := maxPods(it.VCPUs)
	if it.IPv4PerInterface > 0 && it.MaxENIsPerCard > 0 {
		pods = it.MaxENIsPerCard*(it.IPv4PerInterface-1) + 2
	}
	return size - float64(kubeReservedMemoryBaseMiB+kubeReservedMemoryPerPod*pods+evictionHardMiB)
}

// NodeAllocatable is what a node of the pool registers as allocatable: CPU and memory after
// EKS's reservations, its pod limit, the GPUs the NVIDIA device plugin advertises, the EFA
// devices the EFA device plugin advertises (the interfaces the pool attaches), and no huge
// pages: the EKS GPU images reserve none, and Karpenter does not model them, so a pod asking
// for them never finds (or launches) a node.
func NodeAllocatable(p PoolSpec) map[string]string {
	cpu, mem := nodeAllocatable(p.Instance)
	a := map[string]string{
		"cpu": fmt.Sprintf("%dm", int64(cpu)), "memory": fmt.Sprintf("%dMi", int64(mem)), "pods": fmt.Sprint(maxPods(p.Instance.VCPUs)),
		ResourceGPU: fmt.Sprint(p.Instance.GPUCount), "hugepages-2Mi": "0", "hugepages-1Gi": "0",
	}
	if p.Network.EFAInterfaces > 0 {
		a[ResourceEFA] = fmt.Sprint(p.Network.EFAInterfaces)
	}
	return a
}

// TrainingPodsUnfit says why a node that reports this allocatable cannot hold the pool's
// training pods (PodsPerNode of TrainingPod's CPU and memory each), or "" when it can. The
// pods' requests assume NodeAllocatable: a node that keeps more back (a custom image's kubelet
// reservations, huge pages) never runs a job of the pool, which stays Pending, or queued for
// good under Kueue's topology-aware placement, with no error anywhere. A resource the node does
// not report is not judged.
func TrainingPodsUnfit(p PoolSpec, allocatable map[string]string) string {
	var short []string
	for _, r := range []struct{ name, each string }{{"cpu", p.TrainingPod.CPU}, {"memory", p.TrainingPod.Memory}} {
		have, err := resource.ParseQuantity(allocatable[r.name])
		if err != nil {
			continue
		}
		need, err := resource.ParseQuantity(r.each)
		if err != nil {
			continue
		}
		need.Mul(int64(p.TrainingPod.PodsPerNode))
		if have.Cmp(need) < 0 {
			short = append(short, fmt.Sprintf("allocatable %s is %s, less than the %s its %d training pod(s) request", r.name, allocatable[r.name], need.String(), p.TrainingPod.PodsPerNode))
		}
	}
	return strings.Join(short, "; ")
}
