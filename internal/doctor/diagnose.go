package doctor

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/topology/catalog"
	"github.com/gpucluster/gpucluster/internal/efareading"
)

// classify is the core's classification of a transport as NCCL prints it.
var classify = topology.ClassifyTransport

// Connection is one kind of peer connection of a communicator.
type Connection struct {
	Where     string `json:"where"` // intra-node | inter-node
	Transport string `json:"transport"`
	Class     string `json:"class"`
	Count     int    `json:"count"`
}

// CommReport describes one communicator.
type CommReport struct {
	ID     string `json:"id"`
	Parent string `json:"parent,omitempty"` // the communicator it was split from
	// Excerpt: connections logged without their Init lines; ranks and nodes are unknown.
	Excerpt bool `json:"excerpt,omitempty"`
	// Ranks, Nodes and LocalRanks are 0 (absent in JSON) when the log does not say: nodes from NCCL's nNodes line
	// or from every rank's own lines, never guessed from the hosts one pod's log shows.
	Ranks      int `json:"ranks,omitempty"`
	Nodes      int `json:"nodes,omitempty"`
	LocalRanks int `json:"localRanksPerNode,omitempty"`
	Channels   int `json:"channels,omitempty"` // 0: not logged
	// NVLink SHARP and CollNet set up for the communicator (0 and "": not logged).
	NVLSChannels int          `json:"nvlsChannels,omitempty"`
	NVLSHeads    int          `json:"nvlsHeads,omitempty"`
	NVLSInUse    bool         `json:"nvlsInUse,omitempty"` // NCCL set up the communicator's NVLS buffers
	CollNet      int          `json:"collNetConnections,omitempty"`
	CollNetVia   string       `json:"collNetTransport,omitempty"`
	Connections  []Connection `json:"connections"`
	// Peers is the transport of each peer connection (rank to rank), its channels folded.
	Peers []Peer `json:"peers"`
	// IntraNode and InterNode are the class most connections of that side use; "none" only where
	// the log proves there is no such peer (one rank per node, one node), else "unknown".
	IntraNode string `json:"intraNode"`
	InterNode string `json:"interNode"`
}

// Peer is one rank-to-rank connection.
type Peer struct {
	From      int    `json:"from"`
	To        int    `json:"to"`
	Where     string `json:"where"`
	Transport string `json:"transport"`
	Class     string `json:"class"`
	Channels  int    `json:"channels"`
}

// Finding is a known failure signature: what was seen, why, and what to change.
type Finding struct {
	Code     string `json:"code"`
	Severity string `json:"severity"`
	Evidence string `json:"evidence"`
	Cause    string `json:"cause"`
	Fix      string `json:"fix"`
	// Sources are the files (pods' logs) whose lines the evidence quotes, when several were read.
	Sources []string `json:"sources,omitempty"`
}

// Verdict compares what the job did with what the profile expects.
type Verdict struct {
	Against       string `json:"against"` // "profile p5-efa" or "stack x, pool y"
	ExpectedIntra string `json:"expectedIntraNode"`
	ExpectedInter string `json:"expectedInterNode"`
	ObservedIntra string `json:"observedIntraNode"`
	ObservedInter string `json:"observedInterNode"`
	Match         bool   `json:"match"`
	// ExpectedRanksPerNode is the GPUs of one pod (NCCL's node); Observed is NCCL's localRanks,
	// 0 when the log does not say.
	ExpectedRanksPerNode int `json:"expectedRanksPerNode"`
	ObservedRanksPerNode int `json:"observedRanksPerNode"`
	// Status is match, mismatch, or unknown when the log gives nothing to compare.
	Status  string   `json:"status"`
	Reason  string   `json:"reason,omitempty"` // why the status is unknown
	Changes []string `json:"changes,omitempty"`
}

// Verdict statuses.
const (
	VerdictMatch    = "match"
	VerdictMismatch = "mismatch"
	VerdictUnknown  = "unknown"
)

// Report is the doctor's answer (its JSON fields named in docs/doctor.md).
type Report struct {
	NCCLVersion   string `json:"ncclVersion"`
	NetPlugin     string `json:"netPlugin"`
	PluginVersion string `json:"netPluginVersion"`
	Network       string `json:"network"`
	// NetworkFrom says where Network was read when no line named it: the source file of NCCL's
	// transport an error chain names.
	NetworkFrom string `json:"networkFrom,omitempty"`
	// CollNetPlugin is the collective plugin NCCL loaded (SHARP), "" if none.
	CollNetPlugin string       `json:"collNetPlugin,omitempty"`
	Communicators []CommReport `json:"communicators"`
	Topology      *Topo        `json:"topology,omitempty"`
	Findings      []Finding    `json:"findings"`
	Verdict       *Verdict     `json:"verdict,omitempty"`
	// CutLines and UnreadLines say exactly what of the log was not read: the ends of lines over
	// 1 MiB, and lines skipped as binary.
	// NCCLWarnings are NCCL's own WARN lines (of the first 20) that no finding quotes.
	NCCLWarnings []string  `json:"ncclWarnings,omitempty"`
	CutLines     []CutLine `json:"cutLines,omitempty"`
	// JoinedLines are lines that held several NCCL records (a wrapped paste), each read on its own.
	JoinedLines []int `json:"joinedLines,omitempty"`
	UnreadLines []int `json:"unreadLines,omitempty"`
	// What aws-ofi-nccl announced: the platform it tuned for, the provider and NICs it chose, and
	// the variables it set itself (never blamed on the user).
	Platform     string            `json:"platform,omitempty"`
	Provider     string            `json:"provider,omitempty"`
	NICs         int               `json:"nics,omitempty"`
	PluginSetEnv map[string]string `json:"pluginSetEnv,omitempty"`
	// MNNVL is what NCCL said of multi-node NVLink and NVLink SHARP (UltraServers), when it did.
	MNNVL *MNNVL `json:"mnnvl,omitempty"`
	// InstanceType is the type the diagnosis reasoned about: the pool's, else the platform's.
	InstanceType string `json:"instanceType,omitempty"`
	// Sources are the files read as one job (every pod's log), when there were several.
	Sources []string `json:"sources,omitempty"`
	// AssignedNetPlugin is the plugin NCCL assigned the communicators (NCCL ≥ 2.27), which may
	// differ from the one it loaded first; NetPluginPath the external library it loaded.
	AssignedNetPlugin string `json:"assignedNetPlugin,omitempty"`
	NetPluginPath     string `json:"netPluginPath,omitempty"`
	// EFA is what the nodes' EFA devices counted during the run, where the log holds gpucluster's
	// counter blocks (a benchmark job's): the bytes that really crossed EFA, whatever NCCL said.
	EFA *efareading.Traffic `json:"efa,omitempty"`
}

// Diagnose builds the report; pool, when set, is the spec the job ran on.
func Diagnose(l *Log, topo *Topo, pool *topology.PoolSpec, against string) *Report {
	r := &Report{NCCLVersion: l.Version, NetPlugin: l.Plugin, PluginVersion: l.PluginVer, Network: l.Network,
		Communicators: []CommReport{}, Topology: topo, Findings: []Finding{}}
	r.AssignedNetPlugin, r.NetPluginPath, r.CollNetPlugin = l.Assigned, l.PluginPath, l.CollNetPlugin
	switch {
	case r.Network == "" && l.NetFile != "":
		r.Network, r.NetworkFrom = networkOfFile(l.NetFile), l.NetFile+" in an error (no \"Using network\" line)"
	case r.Network == "" && l.IBNoDevice != "" && l.SocketUsing != "":
		// NCCL 2.4 and 2.5 try IB, then sockets, and name the network only by the transport
		// that started (src/transport/net_ib.cc, net_socket.cc of v2.5.6).
		r.Network, r.NetworkFrom = "Socket", "\""+l.IBNoDevice+"\", then \"NET/Socket : Using "+l.SocketUsing+"\" (no \"Using network\" line)"
	}
	ibext := l.transportNamed("NET/IBext")
	switch {
	case r.NetPlugin != "":
	case strings.HasPrefix(r.Network, "IBext"):
		r.NetPlugin = r.Network // HPC-X's external IB plugin names itself so (NVIDIA/nccl#1120, #1584)
	case ibext != "":
		r.NetPlugin = ibext // named only by its connections' transport: "via NET/IBext_v8/0/GDRDMA"
	case l.Provider != "" || strings.Contains(l.Network, "Libfabric") || l.usedLibfabric():
		r.NetPlugin = "Libfabric" // aws-ofi-nccl spoke (a provider, the Libfabric network) without NCCL naming it
	case l.InternalNet || r.Network == "IB" || r.Network == "Socket" || l.Assigned == "IB" || l.Assigned == "Socket":
		r.NetPlugin = "internal" // NCCL said so, or used its own IB or socket transport
	default:
		r.NetPlugin = "unknown" // an excerpt without plugin lines: nothing says which
	}
	for _, c := range l.SortedComms() {
		r.Communicators = append(r.Communicators, commReport(c))
	}
	r.Platform, r.Provider, r.NICs = l.Platform, l.Provider, l.NICs
	r.MNNVL = l.MNNVL
	if len(l.PluginSet) > 0 {
		r.PluginSetEnv = l.PluginSet
	}
	it := instanceOf(l, pool)
	if it != nil {
		r.InstanceType = it.Name
	}
	if topo != nil && it != nil {
		topo.judgeP2P(it) // the catalog knows where PIX/PXB still means no P2P
	}
	r.Findings = signatures(l, topo, it, r.Communicators)
	if l.EFA != nil {
		r.EFA = l.EFA.Traffic()
		r.Findings = append(r.Findings, efaFindings(r.EFA)...)
	}
	switch {
	case pool != nil && topo != nil && len(topo.GPUs) > 0 && len(topo.GPUs) != pool.Instance.GPUCount:
		r.Verdict = &Verdict{Against: against, ExpectedIntra: pool.NCCL.IntraNode.Class, ExpectedInter: pool.NCCL.InterNode.Class,
			ObservedIntra: topology.TransportUnknown, ObservedInter: topology.TransportUnknown, Status: VerdictMismatch,
			Changes: []string{fmt.Sprintf("the topology is of a host with %d GPUs, not the %s (%d GPUs) that %s runs on: take `nvidia-smi topo -m` on a node of the pool",
				len(topo.GPUs), pool.Instance.Name, pool.Instance.GPUCount, against)}}
	case pool != nil && otherInstance(l.Platform, pool, against) != "":
		r.Verdict = &Verdict{Against: against, ExpectedIntra: pool.NCCL.IntraNode.Class, ExpectedInter: pool.NCCL.InterNode.Class,
			ObservedIntra: topology.TransportUnknown, ObservedInter: topology.TransportUnknown, Status: VerdictMismatch,
			Changes: []string{otherInstance(l.Platform, pool, against)}}
	case pool != nil && len(r.Communicators) > 0:
		r.Verdict = verdict(r.Communicators[0], l.Network, l.Platform, pool, against) // the largest: the job's world
	case pool != nil:
		r.Verdict = &Verdict{Against: against, ExpectedIntra: pool.NCCL.IntraNode.Class, ExpectedInter: pool.NCCL.InterNode.Class,
			ObservedIntra: topology.TransportUnknown, ObservedInter: topology.TransportUnknown, Status: VerdictUnknown,
			Reason: "the log holds no communicator initialisation (no \"comm … Init\" line): it ends, or was cut, before NCCL set up its " +
				"connections; capture the job's log from its start, with NCCL_DEBUG=INFO"}
	}
	r.CutLines, r.UnreadLines, r.JoinedLines = l.CutLines, l.UnreadLines, l.JoinedLines
	for _, w := range l.Warnings {
		if w != l.PluginFailure && !quotedBy(r.Findings, w) {
			r.NCCLWarnings = append(r.NCCLWarnings, w)
		}
	}
	return r
}

func commReport(c *Comm) CommReport {
	c.relocate()
	cr := CommReport{ID: c.ID, Parent: c.Parent, Excerpt: c.Excerpt, Ranks: c.Ranks, Nodes: c.Nodes, LocalRanks: c.LocalRanks,
		Channels: c.Channels, NVLSChannels: c.NVLSChannels, NVLSHeads: c.NVLSHeads, NVLSInUse: c.NVLSInUse, CollNet: c.CollNet, CollNetVia: c.CollNetVia,
		IntraNode: topology.TransportNone, InterNode: topology.TransportNone}
	if cr.Nodes == 0 && c.Ranks > 0 && len(c.rankHost) == c.Ranks {
		cr.Nodes = c.Hosts() // every rank printed its own lines: their hosts are the nodes
	}
	if cr.LocalRanks == 0 && cr.Nodes > 0 && c.Ranks%cr.Nodes == 0 {
		cr.LocalRanks = c.Ranks / cr.Nodes
	}
	cr.Peers, cr.Connections = []Peer{}, []Connection{}
	for k, n := range c.Peers {
		cr.Peers = append(cr.Peers, Peer{From: k.From, To: k.To, Where: k.Where + "-node", Transport: k.Via, Class: classify(k.Via), Channels: n})
	}
	sort.Slice(cr.Peers, func(i, j int) bool {
		a, b := cr.Peers[i], cr.Peers[j]
		if a.From != b.From {
			return a.From < b.From
		}
		if a.To != b.To {
			return a.To < b.To
		}
		return a.Transport < b.Transport
	})
	best := map[string]int{}
	for _, key := range topology.SortedKeys(c.Edges) {
		where, via, _ := strings.Cut(key, "|")
		conn := Connection{Where: where + "-node", Transport: via, Class: classify(via), Count: c.Edges[key]}
		cr.Connections = append(cr.Connections, conn)
		if conn.Count > best[where] {
			best[where] = conn.Count
			if where == "intra" {
				cr.IntraNode = conn.Class
			} else {
				cr.InterNode = conn.Class
			}
		}
	}
	// A side without connection lines is "none" only where the log proves it has no peer: one
	// rank in all, one rank per node (no intra-node peer), one node (no inter-node peer). A grep
	// of NET lines, or a log cut after Init, says nothing of the other side.
	if best["intra"] == 0 && c.Ranks != 1 && cr.LocalRanks != 1 {
		cr.IntraNode = topology.TransportUnknown
	}
	if best["inter"] == 0 && c.Ranks != 1 && cr.Nodes != 1 {
		cr.InterNode = topology.TransportUnknown
	}
	return cr
}

// pluginPlatforms: before 1.5 aws-ofi-nccl named its platform, not the instance type.
var pluginPlatforms = map[string]string{"P4d": "p4d.24xlarge", "P4de": "p4de.24xlarge", "P5": "p5.48xlarge"}

// instanceOf is the instance type the job ran on: the pool's when one is given, else the
// platform aws-ofi-nccl announced, when the catalog knows it.
func instanceOf(l *Log, pool *topology.PoolSpec) *catalog.InstanceType {
	if pool != nil {
		return &pool.Instance
	}
	name := l.Platform
	if n, ok := pluginPlatforms[name]; ok {
		name = n
	}
	if it, ok := catalog.Lookup(name); ok {
		return &it
	}
	return nil
}

func signatures(l *Log, topo *Topo, it *catalog.InstanceType, comms []CommReport) []Finding {
	fs := []Finding{} // JSON: [] when there is none, never null
	add := func(code, severity, evidence, cause, fix string) {
		fs = append(fs, Finding{Code: code, Severity: severity, Evidence: evidence, Cause: cause, Fix: fix})
	}
	socket := l.Network == "Socket"
	for _, c := range comms {
		socket = socket || c.InterNode == topology.TransportNetSocket
	}
	// aws-ofi-nccl loaded, then NCCL assigned the communicators another plugin (NCCL ≥ 2.27 moves
	// on when a plugin's device properties fail: "Invalid type of PCI bus", then "Assigned NET
	// plugin IB to comm"; devopsrustem/slurmv4 shows it with provider verbs;ofi_rxm).
	passedOver := l.Assigned != "" && strings.Contains(l.Plugin, "Libfabric") && !strings.Contains(l.Assigned, "Libfabric")
	// With NCCL_NET set NCCL did not carry on without the plugin: nccl-net-unavailable says why.
	failedFast := l.Failures.records.byCode["nccl-net-unavailable"] != nil
	if !failedFast && (l.PluginFailure != "" || l.NoProviders || (socket && strings.Contains(l.Plugin, "Libfabric")) || passedOver) {
		evidence := "aws-ofi-nccl: \"No eligible providers were found\"; NCCL then uses network Socket"
		if l.PluginFailure != "" {
			evidence = "aws-ofi-nccl: \"" + l.PluginFailure + "\"; NCCL then uses network " + networkUsed(l)
		}
		if passedOver {
			evidence = fmt.Sprintf("aws-ofi-nccl loaded (provider %s), then NCCL assigned NET plugin %s to its communicators", orUnknown(l.Provider), l.Assigned)
			if l.PluginFailure != "" {
				evidence += " after \"" + l.PluginFailure + "\""
			}
		}
		if l.Provider != "" && l.Provider != "efa" {
			add("net-plugin-fallback", topology.SeverityError, evidence,
				fmt.Sprintf("aws-ofi-nccl chose Libfabric provider %s, not efa: the host has no EFA device Libfabric can use (or FI_PROVIDER names another), and the plugin cannot describe that provider's devices to NCCL", l.Provider),
				"on EFA instances, give the process its EFA devices (in Kubernetes, vpc.amazonaws.com/efa) and leave FI_PROVIDER unset or efa; where the network is the provider's own (cxi on HPE Slingshot), read the plugin's and libfabric's warnings in this log, which name what failed; on InfiniBand or RoCE clusters, do not load aws-ofi-nccl: NCCL's own IB transport (or the IBext plugin) is the one to use")
		} else if l.Provider == "efa" && l.NICs > 0 {
			add("net-plugin-fallback", topology.SeverityError, evidence,
				fmt.Sprintf("aws-ofi-nccl found %d EFA device(s) with provider efa, then failed to start on them: the devices are there, the plugin could not use them (its WARN lines say where: GPUDirect RDMA, endpoint or memory registration)", l.NICs),
				"read aws-ofi-nccl's WARN lines in this log; check that the node image's EFA driver, libfabric and aws-ofi-nccl versions go together and that GPUDirect RDMA is available (FI_EFA_USE_DEVICE_RDMA, the NVIDIA peer-memory or dmabuf support)")
		} else if !noEFADevice(l) {
			add("net-plugin-fallback", topology.SeverityError, evidence,
				"aws-ofi-nccl could not start and NCCL carried on without it; no line of the log says the EFA devices are missing (\"No eligible providers\", libfabric's \"provider efa output empty list\"): the plugin's WARN lines before its failure say what failed",
				"read aws-ofi-nccl's WARN lines in this log; check that the node image's EFA driver, libfabric and aws-ofi-nccl versions go together, and, in Kubernetes, that the pod requests vpc.amazonaws.com/efa")
		} else {
			if l.Failures.NoEFADevice != "" && !strings.Contains(evidence, l.Failures.NoEFADevice) {
				evidence += "; libfabric: \"" + l.Failures.NoEFADevice + "\""
			}
			add("net-plugin-fallback", topology.SeverityError, evidence,
				"the process has no EFA device to use: in Kubernetes the pod requests no vpc.amazonaws.com/efa, or the EFA device plugin never granted one (it must tolerate the GPU taint to run on GPU nodes); on an instance without Kubernetes, the instance has no EFA interface attached or its EFA driver is not loaded",
				"in Kubernetes, request vpc.amazonaws.com/efa equal to the node's EFA count (the training pod template does), check `kubectl describe node` lists vpc.amazonaws.com/efa and that the EFA device plugin runs on the node; on a bare instance, launch it with EFA interfaces and check `fi_info -p efa` lists them")
		}
	}
	failureFindings(l, add)
	fs = startupCallsOfFallback(fs)
	if failedFast {
		for i := range fs {
			if fs[i].Code == "nccl-net-unavailable" {
				fs[i].Cause = netUnavailableCause(l)
			}
		}
	}
	if l.GDROff != "" {
		explain := "aws-ofi-nccl turned GPUDirect RDMA off (the plugin says so, no user setting): inter-node traffic is staged through host memory, at a fraction of EFA's bandwidth on types that support RDMA"
		fix := "check the node image's GPUDirect RDMA support (the NVIDIA peer-memory module or dma-buf, and a libfabric with FI_HMEM for CUDA) and that the container sees the CUDA driver; the line before it says which call failed"
		if it != nil && it.GPUCPUCoherent {
			explain = fmt.Sprintf("aws-ofi-nccl turned GPUDirect RDMA off on %s, and inter-node traffic is staged through host memory. On this Grace platform the NVIDIA driver lets EFA map GPU memory only if the two share an IOMMU group, which they do not; drivers before R595 skip that check with the module option %s (without it the kernel log says \"NVRM: dma-buf attach failed: topology not supported\"), and R595 drivers no longer can",
				it.Name, topology.GrdmaTopologyOverride)
			fix = fmt.Sprintf("on the node, `grep GrdmaPciTopoCheckOverride /proc/driver/nvidia/params` must show 1: gpucluster's node user data writes `options nvidia %s` to %s before the driver loads; on an image of your own, write the same, reload the driver, and keep it on the 580 branch",
				topology.GrdmaTopologyOverride, topology.NVIDIAModuleOptionsFile)
		}
		add("gdr-disabled", topology.SeverityWarning, l.GDROff, explain, fix)
	}
	mnnvlFindings(l, it, add)
	for _, c := range comms {
		for _, conn := range c.Connections {
			if conn.Where == "intra-node" && strings.HasPrefix(conn.Transport, "NET/") {
				add("network-within-node", topology.SeverityWarning,
					fmt.Sprintf("communicator %s: %d connection(s) between ranks on one host go through %s", c.ID, conn.Count, conn.Transport),
					"NCCL found the two ranks on the same host yet used neither P2P nor shared memory: NCCL_P2P_DISABLE and NCCL_SHM_DISABLE are set, or the ranks cannot share memory (separate containers without a shared IPC namespace and /dev/shm)",
					"unset NCCL_P2P_DISABLE/NCCL_SHM_DISABLE; run the ranks of a host in one container or pod (or with --ipc=host), so NCCL can use P2P or SHM")
				break
			}
		}
	}
	nvswitch := (topo != nil && topo.NVLink()) || (it != nil && it.Interconnect == catalog.InterconnectNVSwitch)
	// The GPUs a node of the job has: the type the log itself names (aws-ofi-nccl's platform)
	// before the pool's, which the log may show to be another type (the verdict says so).
	gpuType := it
	if named := instanceOf(l, nil); named != nil {
		gpuType = named
	}
	for i, c := range l.SortedComms() {
		cr := comms[i]
		// One rank per NCCL node (NCCL's node is the pod: its host hash) on a type with several
		// GPUs, or every rank on cudaDev 0 across as many hosts as ranks: one GPU per pod.
		// Without the instance type (no profile, no platform line) a node's GPU count is unknown:
		// sixteen single-GPU machines look the same as sixteen one-GPU pods, so nothing is claimed.
		onePerNode := cr.LocalRanks == 1 && c.Ranks > 1 && gpuType != nil && gpuType.GPUCount > 1
		onDevice0 := c.AllOnDevice0() && (c.LocalRanks == 1 || c.Hosts() == c.Ranks) && c.Ranks > 1 && gpuType != nil && gpuType.GPUCount > 1
		if !onePerNode && !onDevice0 {
			continue
		}
		cause := "each pod (or container) holds one GPU, so ranks on one node are isolated from each other and talk over the network"
		if nvswitch {
			cause += " instead of NVLink through NVSwitch"
		}
		evidence := fmt.Sprintf("communicator %s: all %d ranks drive cudaDev 0, %d per node", c.ID, c.Ranks, max(c.LocalRanks, 1))
		if onePerNode {
			evidence = fmt.Sprintf("communicator %s: %d ranks, 1 per node (NCCL counts each pod as a node) on %s, which has %d GPUs",
				c.ID, c.Ranks, gpuType.Name, gpuType.GPUCount)
		}
		add("one-gpu-per-pod", topology.SeverityWarning, evidence, cause,
			"run one pod or container per node holding every GPU and EFA device (gpucluster: podLayout: pod-per-node)")
		break
	}
	for _, key := range []string{"NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_READ_ENABLE"} {
		if v, ok := l.Env[key]; ok && l.PluginSet[key] != v {
			add("p2p-restricted", topology.SeverityWarning, fmt.Sprintf("%s set by environment to %s", key, v),
				"GPU peer-to-peer is disabled or forced into read mode by the environment (often a leftover from a virtualised or PCIe-only host)",
				"unset "+key+" unless a benchmark on this instance type proved it faster")
		}
	}
	if topo != nil && topo.P2PPairs > 0 {
		for _, c := range comms {
			if c.IntraNode == topology.TransportSHM {
				add("p2p-blocked", topology.SeverityWarning, fmt.Sprintf("communicator %s moves intra-node traffic through SHM although %d GPU pairs could use P2P", c.ID, topo.P2PPairs),
					"P2P is blocked between GPUs that support it: virtualisation, PCIe ACS, or NCCL_P2P settings",
					"check NCCL_P2P_* in the environment and the GPU topology seen inside the container or pod (nvidia-smi topo -m)")
				break
			}
		}
	}
	if l.BootstrapSec > 10 || (l.InitSec > 0 && l.BootstrapSec > l.InitSec/2 && l.BootstrapSec > 2) {
		evidence := fmt.Sprintf("Init timings: bootstrap %.1f s of %.1f s", l.BootstrapSec, l.InitSec)
		if l.InitSec == 0 {
			evidence = fmt.Sprintf("Bootstrap timings: total %.1f s", l.BootstrapSec) // NCCL ≥ 2.23 without the PROFILE subsystem
		}
		add("slow-bootstrap", topology.SeverityWarning, evidence,
			"ranks waited for each other to start: ranks launched at different times (in Kubernetes, slow pod scheduling or image pulls), or a bootstrap interface that is hard to reach",
			"start all ranks together (in Kubernetes, a gang-scheduled Job and a pre-pulled image), and pin NCCL_SOCKET_IFNAME to the host's or pod's interface if the log shows several")
	}
	// aws-ofi-nccl sets NCCL_PROTO itself on some platforms; NCCL then reports it "set by
	// environment" like any other: only a value the plugin did not set is the user's.
	if v, ok := l.Env["NCCL_PROTO"]; ok && l.PluginSet["NCCL_PROTO"] != v {
		add("nccl-proto-forced", topology.SeverityWarning, "NCCL_PROTO set by environment to "+v,
			"one protocol is forced for every message size; NCCL and aws-ofi-nccl choose per platform",
			"unset NCCL_PROTO unless a benchmark on this instance type proved it better")
	}
	if l.Loopback != "" {
		loopbackFinding(l, fs, add)
	}
	if len(l.Unreachable) > 0 {
		addFailure(add, "efa-unreachable", l.Unreachable[0], 1)
	}
	for _, e := range l.CUDAErrors {
		if is802(e) {
			addFailure(add, "fabric-manager-down", e, 1)
			break
		}
	}
	fs = explained(onePerCode(fs))
	sort.SliceStable(fs, func(i, j int) bool {
		return fs[i].Severity == topology.SeverityError && fs[j].Severity != topology.SeverityError
	})
	return fs
}

func verdict(c CommReport, network, platform string, pool *topology.PoolSpec, against string) *Verdict {
	// NCCL's node is a pod (its host hash). With one GPU per pod NCCL sees no second rank on a
	// node: the machine's pods reach each other through the network, judged as inter-node.
	perPod := pool.TrainingPod.GPUsPerPod
	expIntra := pool.NCCL.IntraNode.Class
	if perPod <= 1 {
		expIntra = topology.TransportNone
	}
	v := &Verdict{Against: against, ExpectedIntra: expIntra, ExpectedInter: pool.NCCL.InterNode.Class,
		ExpectedRanksPerNode: perPod, ObservedRanksPerNode: c.LocalRanks,
		ObservedIntra: c.IntraNode, ObservedInter: c.InterNode, Match: true}
	mismatch := func(change string) { v.Match, v.Changes = false, append(v.Changes, change) }
	var unknown []string
	// A log from another instance type is that, before any other judgement.
	if change := otherInstance(platform, pool, against); change != "" {
		mismatch(change)
	}

	switch {
	case c.LocalRanks > 0 && c.LocalRanks != perPod && c.LocalRanks == 1:
		mismatch(fmt.Sprintf("NCCL found 1 rank per node, where %s puts %d GPUs in one pod: each pod holds one GPU, so its GPUs' traffic leaves %s for the network; run one pod per node holding every GPU (podLayout: pod-per-node)",
			against, perPod, intraNodeName(pool)))
	case c.LocalRanks > 0 && c.LocalRanks != perPod:
		mismatch(fmt.Sprintf("NCCL found %d ranks per node, where %s puts %d GPUs in one pod: check the pod's GPU request and the launcher's ranks per pod (-npernode, --nproc-per-node)",
			c.LocalRanks, against, perPod))
	case c.LocalRanks == 0:
		unknown = append(unknown, "the log does not say how many ranks share a node (no nNodes/localRanks line, and not every rank's lines)")
	}

	switch {
	case c.IntraNode == topology.TransportUnknown && expIntra != topology.TransportNone:
		unknown = append(unknown, fmt.Sprintf("the log holds no intra-node connection line: intra-node %s cannot be checked", expIntra))
	case topology.WorseTransport(c.IntraNode, expIntra):
		mismatch(fmt.Sprintf("intra-node traffic uses %s instead of %s: check NCCL_P2P_* settings, that fabric manager runs (NVSwitch types) and that the pod sees all GPUs", c.IntraNode, expIntra))
	case expIntra != topology.TransportNone && c.IntraNode == topology.TransportNone && c.LocalRanks > 1:
		mismatch(fmt.Sprintf("%d ranks share each node, yet no intra-node connection was logged where %s is expected", c.LocalRanks, expIntra))
	case expIntra != topology.TransportNone && c.IntraNode == topology.TransportNone && c.LocalRanks == 0:
		unknown = append(unknown, fmt.Sprintf("no intra-node connection was logged, and whether ranks share a node is unknown: %s cannot be checked", expIntra))
	}

	switch {
	case topology.WorseTransport(c.InterNode, v.ExpectedInter) && c.InterNode == topology.TransportNetSocket:
		mismatch("inter-node traffic fell back to TCP sockets: give the pod its EFA devices (vpc.amazonaws.com/efa) and check the EFA device plugin and aws-ofi-nccl load")
	case topology.WorseTransport(c.InterNode, v.ExpectedInter):
		mismatch(fmt.Sprintf("inter-node traffic uses %s instead of %s: GPUDirect RDMA is not in use; check the node image's EFA and NVIDIA peer-memory (dmabuf) support", c.InterNode, v.ExpectedInter))
	case strings.HasPrefix(v.ExpectedInter, "net-libfabric") && network == "Socket":
		// No inter-node connection in this communicator, but NCCL chose its network for every one.
		mismatch("NCCL chose network Socket: inter-node traffic runs over TCP, not EFA; see the findings for why aws-ofi-nccl was not used")
	case v.ExpectedInter != topology.TransportNone && c.InterNode == topology.TransportUnknown:
		unknown = append(unknown, fmt.Sprintf("the log holds no inter-node connection line: inter-node %s cannot be checked", v.ExpectedInter))
	case v.ExpectedInter != topology.TransportNone && c.InterNode == topology.TransportNone && c.Nodes != 1:
		unknown = append(unknown, fmt.Sprintf("no inter-node connection was logged: %s cannot be checked", v.ExpectedInter))
	}

	switch {
	case !v.Match:
		v.Status = VerdictMismatch
	case len(unknown) > 0:
		v.Match, v.Status, v.Reason = false, VerdictUnknown, strings.Join(unknown, "; ")
	default:
		v.Status = VerdictMatch
	}
	return v
}

// otherInstance names a log from another instance type than the pool's ("" when it is the
// pool's, or unnamed: aws-ofi-nccl's platform before 1.5 is a family, not a type).
func otherInstance(platform string, pool *topology.PoolSpec, against string) string {
	if platform == "" || !strings.Contains(platform, ".") || platform == pool.Instance.Name {
		return ""
	}
	return fmt.Sprintf("the log comes from a %s (aws-ofi-nccl names it), not the %s that %s runs on: compare it with that type's profile", platform, pool.Instance.Name, against)
}

func intraNodeName(pool *topology.PoolSpec) string {
	if pool.Instance.Interconnect == catalog.InterconnectNVSwitch {
		return "NVLink"
	}
	return "the node"
}

// networkUsed is the network NCCL used: its "Using network" line, else its socket transport's
// own "NET/Socket : Using …" line, else not logged.
func networkUsed(l *Log) string {
	switch {
	case l.Network != "":
		return l.Network
	case l.SocketUsing != "":
		return "Socket (NET/Socket : Using " + l.SocketUsing + ")"
	}
	return "(not logged)"
}

func orUnknown(s string) string {
	if s == "" {
		return "(not logged)"
	}
	return s
}

// quotedBy says whether a finding's evidence quotes the warning.
func quotedBy(fs []Finding, warning string) bool {
	for _, f := range fs {
		if strings.Contains(f.Evidence, warning) {
			return true
		}
	}
	return false
}

// explained drops the general failures a named cause accounts for: without an IMEX channel or
// NVLS multicast NCCL's CUDA calls fail (CUDA 800, NVIDIA/nccl#1925) and the framework reports an
// unhandled error; without fabric manager every CUDA call fails with 802.
func explained(fs []Finding) []Finding {
	cause := false
	for _, f := range fs {
		cause = cause || f.Code == "mnnvl-not-working" || f.Code == "nvls-bind-failed" || f.Code == "fabric-manager-down"
	}
	if !cause {
		return fs
	}
	return slices.DeleteFunc(fs, func(f Finding) bool { return f.Code == "cuda-error" || f.Code == "nccl-error" })
}

// onePerCode keeps each code's first finding: a class the records name and the same class read
// another way (a traceback's, the unreachable lines') are one finding.
func onePerCode(fs []Finding) []Finding {
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		if !seen[f.Code] {
			seen[f.Code] = true
			out = append(out, f)
		}
	}
	return out
}

// noEFADevice says whether a line of the log says the EFA provider found no device: aws-ofi-nccl's
// "No eligible providers were found" or (before 1.0) "Could not find any optimal provider", or
// libfabric's "fi_getinfo: provider efa output empty list".
// netUnavailableCause is why the network NCCL_NET names did not start, as far as the log says.
func netUnavailableCause(l *Log) string {
	const set = "NCCL_NET names the one network NCCL may use (gpucluster sets it to aws-ofi-nccl's name on EFA pools, so that a job fails here instead of running over TCP sockets), and it did not start: "
	switch {
	case noEFADevice(l):
		found := "\"No eligible providers were found\""
		if l.PluginFailure != "" {
			found = "\"" + l.PluginFailure + "\""
		}
		return set + "aws-ofi-nccl loaded and found no EFA device (" + found + "): the pod requests no vpc.amazonaws.com/efa, or the EFA device plugin never granted one (it must run on the node, tolerating its taints), or the node has no EFA interface"
	case l.PluginFailure != "":
		return set + "aws-ofi-nccl loaded and failed to start (\"" + l.PluginFailure + "\"); its WARN lines before it say where"
	case l.Plugin == "" && l.PluginVer == "":
		return set + "the log shows no aws-ofi-nccl at all: the image does not carry the plugin where NCCL looks for it (libnccl-net.so on LD_LIBRARY_PATH, or the library NCCL_NET_PLUGIN names)"
	}
	return set + "aws-ofi-nccl loaded as \"" + l.Plugin + "\", a name NCCL_NET does not give"
}

func noEFADevice(l *Log) bool {
	return l.NoProviders || l.Failures.NoEFADevice != "" ||
		strings.Contains(l.PluginFailure, "find any optimal provider") || strings.Contains(l.PluginFailure, "provider efa output empty list")
}

// Outcomes of a report: what a job's log says of the job.
const (
	OutcomePass    = "pass"
	OutcomeFail    = "fail"    // an error finding, or a verdict that does not match
	OutcomeUnknown = "unknown" // a verdict was asked for and the log cannot give it
)

// Outcome is what the report says of the job: a failure in the log or a mismatch fails it,
// whatever else it shows.
func (r *Report) Outcome() string {
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError {
			return OutcomeFail
		}
	}
	switch {
	case r.Verdict == nil || r.Verdict.Status == VerdictMatch:
		return OutcomePass
	case r.Verdict.Status == VerdictMismatch:
		return OutcomeFail
	}
	return OutcomeUnknown
}

// loopbackFinding says NCCL bound its sockets to lo: an error where the log shows ranks on more
// than one host or a connection that failed (peers on other hosts cannot reach 127.0.0.1),
// nothing where it proves every rank on one host (they reach each other over lo), a warning
// where it shows neither.
func loopbackFinding(l *Log, fs []Finding, add func(code, severity, evidence, cause, fix string)) {
	severity, oneHost := topology.SeverityWarning, len(l.Comms) > 0
	for _, c := range l.Comms {
		if c.Nodes > 1 || c.Hosts() > 1 {
			severity = topology.SeverityError
		}
		oneHost = oneHost && !c.Excerpt && (c.Nodes == 1 || c.Ranks > 0 && len(c.rankHost) == c.Ranks && c.Hosts() == 1)
	}
	for _, f := range fs {
		switch f.Code {
		case "socket-connect-failed", "nccl-remote-error", "collective-timeout", "nccl-error":
			severity = topology.SeverityError
		}
	}
	if oneHost && severity != topology.SeverityError {
		return // every rank on one host: lo reaches them all
	}
	add("loopback-interface", severity, l.Loopback,
		"NCCL bound its sockets to the loopback interface lo: it takes lo only when the host (or container) has no other interface or NCCL_SOCKET_IFNAME names it (src/misc/socket.cc), and a peer on another host cannot reach 127.0.0.1, so its bootstrap and socket connections fail or hang",
		"set NCCL_SOCKET_IFNAME to the interface the hosts share (in Kubernetes the pod's eth0), or leave it unset; check that the container or pod has a network interface besides lo")
}

// startupCallsOfFallback folds aws-ofi-nccl's failed calls into net-plugin-fallback when both
// are found: the calls failed while the plugin started, and NCCL carried on without it; the
// first failed call is the fallback's cause, quoted in its evidence (aws/aws-ofi-nccl#889:
// "Creating new endpoint … failed", then "aws-ofi-nccl initialization failed").
func startupCallsOfFallback(fs []Finding) []Finding {
	fallback, call := -1, -1
	for i, f := range fs {
		switch f.Code {
		case "net-plugin-fallback":
			fallback = i
		case "ofi-call-failed":
			call = i
		}
	}
	if fallback < 0 || call < 0 {
		return fs
	}
	fs[fallback].Evidence += "; the first failed call: " + fs[call].Evidence
	return slices.Delete(fs, call, call+1)
}
