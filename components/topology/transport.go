package topology

import (
	"strings"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// Transport classes beyond those a pool is expected to use: what NCCL may also print.
const (
	TransportNVLS    = "nvls"    // NVLink SHARP through NVSwitch
	TransportNetIB   = "net-ib"  // NCCL's InfiniBand/RoCE transport
	TransportCollNet = "collnet" // a collective network plugin
	TransportOther   = "other"
)

// ClassifyTransport names the transport of an NCCL connection as NCCL_DEBUG=INFO prints it
// ("P2P/CUMEM/read", "SHM/direct/direct", "NET/AWS Libfabric/0/GDRDMA", "NET/Socket/1") by its
// class. Both spellings of every NCCL and aws-ofi-nccl version are accepted ("AWS Libfabric" and
// "Libfabric", P2P/IPC, P2P/CUMEM and P2P/direct).
func ClassifyTransport(via string) string {
	switch {
	case strings.Contains(via, "NVLS"):
		return TransportNVLS
	case strings.HasPrefix(via, "P2P"):
		return TransportP2P
	case strings.HasPrefix(via, "SHM"), strings.Contains(via, "shared memory"): // NCCL ≤ 2.12: "via direct shared memory"
		return TransportSHM
	case strings.HasPrefix(via, "NET/") && strings.Contains(via, "Libfabric") && strings.Contains(via, "GDRDMA"):
		return TransportNetLibfabricGDR
	case strings.HasPrefix(via, "NET/") && strings.Contains(via, "Libfabric"):
		return TransportNetLibfabric
	case strings.HasPrefix(via, "NET/Socket"):
		return TransportNetSocket
	case strings.HasPrefix(via, "NET/IB"):
		return TransportNetIB
	case strings.Contains(via, "CollNet"):
		return TransportCollNet
	}
	return TransportOther
}

// transportRank orders transport classes from worst to best, for traffic within a node and
// between nodes alike: sockets are worst; EFA without GPUDirect RDMA, IB and SHM sit in the
// middle (data through host memory); EFA with GPUDirect RDMA is the best a network gives; P2P
// and NVLS (NVLink) are the best within a node.
var transportRank = map[string]int{
	TransportNone: 0, TransportNetSocket: 1, TransportNetIB: 2, TransportNetLibfabric: 2, TransportSHM: 2,
	TransportNetLibfabricGDR: 3, TransportP2P: 4, TransportNVLS: 4,
}

// WorseTransport says whether an observed transport class is worse than the expected one. An
// absent side ("none") is never worse: there is nothing to compare.
func WorseTransport(observed, expected string) bool {
	if observed == TransportNone || expected == TransportNone || observed == TransportUnknown || expected == TransportUnknown {
		return false
	}
	return transportRank[observed] < transportRank[expected]
}

// LinkAllowsP2P says whether NCCL would use GPU peer-to-peer over a link of `nvidia-smi topo -m`
// (NV#, PIX, PXB, PHB, NODE, SYS) on an instance type. NVLink always; PCIe within a switch (PIX,
// PXB) only where the catalog says the type permits PCIe P2P: g5, g6 and g6e report PIX/PXB yet
// their hypervisor blocks P2P. Through a host bridge or across NUMA nodes NCCL's default
// NCCL_P2P_LEVEL uses SHM. it may be nil when the type is unknown: the label alone decides.
func LinkAllowsP2P(link string, it *catalog.InstanceType) bool {
	switch {
	case strings.HasPrefix(link, "NV"):
		return true
	case link == "PIX" || link == "PXB":
		return it == nil || it.Interconnect != catalog.InterconnectPCIe || it.PCIeP2P
	}
	return false
}
