package topology

import (
	"fmt"
	"sort"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// pluginManagedEnv lists what aws-ofi-nccl sets itself on AWS platforms (src/platform-aws.c:
// platform_init and the per-platform table, which also points NCCL_TOPO_FILE at its p4d/p4de
// topology files). gpucluster does not set these: the plugin knows the platform better.
func pluginManagedEnv(it catalog.InstanceType) []string {
	env := []string{"FI_EFA_FORK_SAFE", "NCCL_BUFFSIZE", "NCCL_P2P_NET_CHUNKSIZE", "NCCL_PROTO"}
	if it.OFITopologyFile {
		env = append(env, "NCCL_TOPO_FILE")
	}
	sort.Strings(env)
	return env
}

// obsoleteEnv are variables current libfabric ignores; setting them suggests a stale recipe.
var obsoleteEnv = map[string]string{
	"FI_EFA_USE_DEVICE_RDMA": "libfabric 1.18+ enables device RDMA by itself where the hardware has it",
}

// trainingEnv is the NCCL/libfabric environment of the training pod: the little gpucluster sets,
// then the user's overrides, which win. Sorted by name.
func trainingEnv(p Profile, it catalog.InstanceType) []EnvVar {
	env := map[string]EnvVar{
		"NCCL_DEBUG": {Name: "NCCL_DEBUG", Value: "INFO", Source: "gpucluster",
			Why: "prints the transport of every connection, which `gpucluster doctor` checks against this spec"},
	}
	if it.MultiNodeNVLink() {
		for k, v := range mnnvlEnv {
			env[k] = EnvVar{Name: k, Value: v, Source: "gpucluster",
				Why: "NCCL fails instead of falling back to EFA when the UltraServer's multi-node NVLink (IMEX) or NVLink SHARP is not working"}
		}
	}
	for k, v := range p.NCCLEnv {
		env[k] = EnvVar{Name: k, Value: v, Source: "override"}
	}
	out := make([]EnvVar, 0, len(env))
	for _, e := range env {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ncclEnvFindings reports overrides that fight the plugin or do nothing.
func ncclEnvFindings(p Profile, it catalog.InstanceType) []Finding {
	var fs []Finding
	managed := map[string]bool{}
	if p.Fabric == FabricEFA {
		for _, k := range pluginManagedEnv(it) {
			managed[k] = true
		}
	}
	for _, k := range sortedKeys(p.NCCLEnv) {
		if managed[k] {
			fs = append(fs, Finding{SeverityWarning, "nccl-env-overrides-plugin",
				fmt.Sprintf("ncclEnv.%s overrides aws-ofi-nccl's own setting for %s; keep it only if a benchmark proved it better", k, it.Name)})
		}
		if why, ok := obsoleteEnv[k]; ok {
			fs = append(fs, Finding{SeverityWarning, "nccl-env-obsolete", fmt.Sprintf("ncclEnv.%s is obsolete: %s", k, why)})
		}
		if k == "NCCL_PROTO" {
			fs = append(fs, Finding{SeverityWarning, "nccl-proto-forced",
				"ncclEnv.NCCL_PROTO forces one protocol for every message size; NCCL and aws-ofi-nccl choose per platform"})
		}
	}
	return fs
}

// expectedTransports says which NCCL transports a correctly built pool uses, and why.
func expectedTransports(p Profile, it catalog.InstanceType, pod TrainingPodSpec) (intra, inter Transport) {
	efa := p.Fabric == FabricEFA && it.EFA
	switch {
	case efa && it.GPUDirectRDMA:
		inter = Transport{TransportNetLibfabricGDR, transportLogNetLibfabricGD,
			fmt.Sprintf("EFA through aws-ofi-nccl with GPUDirect RDMA: %s NICs read and write GPU memory directly", it.Name)}
	case efa:
		inter = Transport{TransportNetLibfabric, transportLogNetLibfabric,
			fmt.Sprintf("EFA through aws-ofi-nccl; %s has no GPUDirect RDMA, so data is staged through host memory", it.Name)}
	default:
		inter = Transport{TransportNetSocket, transportLogNetSocket,
			"no EFA: NCCL's built-in TCP socket transport over ENA"}
	}
	if it.MultiNodeNVLink() {
		inter = Transport{TransportP2P, transportLogMNNVL,
			fmt.Sprintf("multi-node NVLink: the UltraServer's %d-GPU NVLink domain joins the nodes, through the IMEX channel of the job's ComputeDomain; %s carries only what leaves the UltraServer",
				it.GPUCount*p.MaxNodes, inter.Class)}
	}
	switch {
	case pod.GPUsPerPod == 1 && pod.PodsPerNode > 1:
		// Pods are isolated: ranks in different pods on one node cannot share NVLink or SHM.
		intra = inter
		intra.Reason = fmt.Sprintf("one GPU per pod: ranks on one node are in different pods and talk over the network (%s) instead of %s",
			inter.Class, intraNodeLink(it))
	case pod.GPUsPerPod <= 1:
		intra = Transport{TransportNone, "", "one GPU per node: no intra-node peer"}
	case it.Interconnect == catalog.InterconnectNVSwitch:
		needs := "needs fabric manager running"
		if !it.FabricManager {
			needs = "the UltraServer's NVLink switch trays, fabric-managed outside the instance"
		}
		intra = Transport{TransportP2P, transportLogP2P,
			fmt.Sprintf("NVLink%d through NVSwitch, %d GB/s per GPU (%s)", it.NVLinkGeneration, it.NVLinkGBps, needs)}
	case it.GPUsCanP2P():
		intra = Transport{TransportP2P, transportLogP2P, "PCIe peer-to-peer between the GPUs"}
	default:
		intra = Transport{TransportSHM, transportLogSHM,
			fmt.Sprintf("%s GPUs cannot P2P (nvidia-smi topo -m shows NODE/SYS): two copies through host memory, which is why /dev/shm must be large", it.Name)}
	}
	return intra, inter
}

func intraNodeLink(it catalog.InstanceType) string {
	if it.Interconnect == catalog.InterconnectNVSwitch {
		return fmt.Sprintf("NVLink (%d GB/s per GPU)", it.NVLinkGBps)
	}
	return "host shared memory"
}

// expectedBandwidth is the per-node inter-node link capacity the pool's interfaces can use:
// each EFA interface reaches one network card's share; an ENA-only pool has only card 0.
func expectedBandwidth(it catalog.InstanceType, efaUsed int) (float64, string) {
	if efaUsed > 0 {
		gbps := it.GbpsPerCard() * float64(efaUsed)
		note := fmt.Sprintf("%d of %d EFA network cards carry EFA at %g Gbps each", efaUsed, it.MaxEFA, it.GbpsPerCard())
		return gbps, note + burstNote(it)
	}
	note := fmt.Sprintf("one ENA interface on card 0 (%g Gbps); TCP sockets reach only part of it (field: g6e-ena ran 2.2x slower than g6e-efa)", it.GbpsPerCard())
	return it.GbpsPerCard(), note + burstNote(it)
}

// burstNote: a burst type's figure is its baseline; the advertised "up to" rate lasts minutes.
func burstNote(it catalog.InstanceType) string {
	if !it.NetworkBurstOnly {
		return ""
	}
	return fmt.Sprintf("; the baseline, which sustained traffic keeps: bursts reach up to %d Gbps", it.NetworkGbps)
}
