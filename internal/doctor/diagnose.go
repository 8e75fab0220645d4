package doctor

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
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
	ID          string       `json:"id"`
	Ranks       int          `json:"ranks"`
	Nodes       int          `json:"nodes"`
	LocalRanks  int          `json:"localRanksPerNode"`
	Channels    int          `json:"channels"`
	Connections []Connection `json:"connections"`
	// Peers is the transport of each peer connection (rank to rank), its channels folded.
	Peers     []Peer `json:"peers"`
	IntraNode string `json:"intraNode"` // the class most intra-node connections use, "none" without any
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
}

// Verdict compares what the job did with what the profile expects.
type Verdict struct {
	Against       string `json:"against"` // "profile p5-efa" or "stack x, pool y"
	ExpectedIntra string `json:"expectedIntraNode"`
	ExpectedInter string `json:"expectedInterNode"`
	ObservedIntra string `json:"observedIntraNode"`
	ObservedInter string `json:"observedInterNode"`
	Match         bool   `json:"match"`
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

// Report is the doctor's answer (JSON schema in README.md, "gpucluster doctor").
type Report struct {
	NCCLVersion   string       `json:"ncclVersion"`
	NetPlugin     string       `json:"netPlugin"`
	PluginVersion string       `json:"netPluginVersion"`
	Network       string       `json:"network"`
	Communicators []CommReport `json:"communicators"`
	Topology      *Topo        `json:"topology,omitempty"`
	Findings      []Finding    `json:"findings"`
	Verdict       *Verdict     `json:"verdict,omitempty"`
	// CutLines and UnreadLines say exactly what of the log was not read: the ends of lines over
	// 1 MiB, and lines skipped as binary.
	// NCCLWarnings are NCCL's own WARN lines (of the first 20) that no finding quotes.
	NCCLWarnings []string  `json:"ncclWarnings,omitempty"`
	CutLines     []CutLine `json:"cutLines,omitempty"`
	UnreadLines  []int     `json:"unreadLines,omitempty"`
}

// Diagnose builds the report; pool, when set, is the spec the job ran on.
func Diagnose(l *Log, topo *Topo, pool *topology.PoolSpec, against string) *Report {
	r := &Report{NCCLVersion: l.Version, NetPlugin: l.Plugin, PluginVersion: l.PluginVer, Network: l.Network,
		Communicators: []CommReport{}, Topology: topo, Findings: []Finding{}}
	if r.NetPlugin == "" {
		r.NetPlugin = "internal"
	}
	for _, c := range l.SortedComms() {
		r.Communicators = append(r.Communicators, commReport(c))
	}
	if topo != nil && pool != nil {
		topo.judgeP2P(&pool.Instance) // the catalog knows where PIX/PXB still means no P2P
	}
	r.Findings = signatures(l, topo, pool, r.Communicators)
	switch {
	case pool != nil && len(r.Communicators) > 0:
		r.Verdict = verdict(r.Communicators[0], pool, against)
	case pool != nil:
		r.Verdict = &Verdict{Against: against, ExpectedIntra: pool.NCCL.IntraNode.Class, ExpectedInter: pool.NCCL.InterNode.Class,
			ObservedIntra: topology.TransportNone, ObservedInter: topology.TransportNone, Status: VerdictUnknown,
			Reason: "the log holds no communicator initialisation (no \"comm … Init\" line): it ends, or was cut, before NCCL set up its " +
				"connections; capture the job's log from its start, with NCCL_DEBUG=INFO"}
	}
	r.CutLines, r.UnreadLines = l.CutLines, l.UnreadLines
	quoted := map[string]bool{}
	for _, f := range r.Findings {
		quoted[f.Evidence] = true
	}
	for _, w := range l.Warnings {
		if !quoted[w] {
			r.NCCLWarnings = append(r.NCCLWarnings, w)
		}
	}
	return r
}

func commReport(c *Comm) CommReport {
	cr := CommReport{ID: c.ID, Ranks: c.Ranks, Nodes: c.Nodes, LocalRanks: c.LocalRanks, Channels: c.Channels,
		IntraNode: topology.TransportNone, InterNode: topology.TransportNone}
	if cr.Nodes == 0 {
		cr.Nodes = c.Hosts()
	}
	if cr.LocalRanks == 0 && cr.Nodes > 0 {
		cr.LocalRanks = c.Ranks / cr.Nodes
	}
	cr.Peers = []Peer{}
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
	return cr
}

func signatures(l *Log, topo *Topo, pool *topology.PoolSpec, comms []CommReport) []Finding {
	var fs []Finding
	add := func(code, severity, evidence, cause, fix string) {
		fs = append(fs, Finding{code, severity, evidence, cause, fix})
	}
	socket := l.Network == "Socket"
	for _, c := range comms {
		socket = socket || c.InterNode == topology.TransportNetSocket
	}
	if l.NoProviders || (socket && strings.Contains(l.Plugin, "Libfabric")) {
		add("net-plugin-fallback", topology.SeverityError,
			"aws-ofi-nccl: \"No eligible providers were found\"; NCCL then uses network Socket",
			"the pod has no EFA device: it requests no vpc.amazonaws.com/efa, or the EFA device plugin never granted one (it must tolerate the GPU taint to run on GPU nodes)",
			"request vpc.amazonaws.com/efa equal to the node's EFA count (the training pod template does), check `kubectl describe node` lists vpc.amazonaws.com/efa, and check the EFA device plugin runs on the node")
	}
	nvswitch := (topo != nil && topo.NVLink()) || (pool != nil && pool.Instance.Interconnect == topology.InterconnectNVSwitch)
	for _, c := range l.SortedComms() {
		if c.AllOnDevice0() && (c.LocalRanks == 1 || c.Hosts() == c.Ranks) && c.Ranks > 1 {
			cause := "each pod holds one GPU, so ranks on one node are isolated from each other and talk over the network"
			if nvswitch {
				cause += " instead of NVLink through NVSwitch"
			}
			add("one-gpu-per-pod", topology.SeverityWarning,
				fmt.Sprintf("communicator %s: all %d ranks drive cudaDev 0, %d per node", c.ID, c.Ranks, max(c.LocalRanks, 1)),
				cause, "run one pod per node holding every GPU and EFA device (podLayout: pod-per-node)")
			break
		}
	}
	for _, key := range []string{"NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_READ_ENABLE"} {
		if v, ok := l.Env[key]; ok {
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
					"check NCCL_P2P_* in the environment and the GPU topology seen inside the pod (nvidia-smi topo -m)")
				break
			}
		}
	}
	if l.BootstrapSec > 10 || (l.InitSec > 0 && l.BootstrapSec > l.InitSec/2 && l.BootstrapSec > 2) {
		add("slow-bootstrap", topology.SeverityWarning, fmt.Sprintf("Init timings: bootstrap %.1f s of %.1f s", l.BootstrapSec, l.InitSec),
			"ranks waited for each other to start: slow pod scheduling or image pulls, or a bootstrap interface that is hard to reach",
			"start all ranks together (a gang-scheduled Job), pre-pull the image, and pin NCCL_SOCKET_IFNAME to the pod's interface if the log shows several")
	}
	if v, ok := l.Env["NCCL_PROTO"]; ok {
		add("nccl-proto-forced", topology.SeverityWarning, "NCCL_PROTO set by environment to "+v,
			"one protocol is forced for every message size; NCCL and aws-ofi-nccl choose per platform",
			"unset NCCL_PROTO unless a benchmark on this instance type proved it better")
	}
	if len(l.Unreachable) > 0 {
		add("efa-unreachable", topology.SeverityError, l.Unreachable[0],
			"EFA packets do not reach the peer: the EFA security group allows traffic in from itself but not out to itself (an egress to 0.0.0.0/0 does not cover EFA), or the nodes are in different subnets",
			"add an egress rule for all traffic to the security group itself (gpucluster's EFA group has both rules) and keep the pool in one subnet")
	}
	for _, e := range l.CUDAErrors {
		if strings.Contains(e, "802") || strings.Contains(strings.ToLower(e), "system not yet initialized") {
			add("fabric-manager-down", topology.SeverityError, e,
				"CUDA error 802 (system not yet initialized): NVIDIA Fabric Manager is not running, so the NVSwitch fabric is not set up",
				"run nv-fabricmanager at the node driver's exact version: the EKS AL2023/Bottlerocket NVIDIA images run it on the host; custom images need gpucluster's fabric-manager DaemonSet (fabricManager: daemonset)")
			break
		}
	}
	sort.SliceStable(fs, func(i, j int) bool {
		return fs[i].Severity == topology.SeverityError && fs[j].Severity != topology.SeverityError
	})
	return fs
}

func verdict(c CommReport, pool *topology.PoolSpec, against string) *Verdict {
	v := &Verdict{Against: against, ExpectedIntra: pool.NCCL.IntraNode.Class, ExpectedInter: pool.NCCL.InterNode.Class,
		ObservedIntra: c.IntraNode, ObservedInter: c.InterNode, Match: true, Status: VerdictMatch}
	defer func() {
		if !v.Match {
			v.Status = VerdictMismatch
		}
	}()
	if topology.WorseTransport(c.IntraNode, v.ExpectedIntra) {
		v.Match = false
		switch {
		case strings.HasPrefix(c.IntraNode, "net"):
			v.Changes = append(v.Changes, "ranks on one node talk over the network: run one pod per node holding every GPU (podLayout: pod-per-node)")
		default:
			v.Changes = append(v.Changes, fmt.Sprintf("intra-node traffic uses %s instead of %s: check NCCL_P2P_* settings, that fabric manager runs (NVSwitch types) and that the pod sees all GPUs", c.IntraNode, v.ExpectedIntra))
		}
	}
	if topology.WorseTransport(c.InterNode, v.ExpectedInter) {
		v.Match = false
		switch {
		case c.InterNode == topology.TransportNetSocket:
			v.Changes = append(v.Changes, "inter-node traffic fell back to TCP sockets: give the pod its EFA devices (vpc.amazonaws.com/efa) and check the EFA device plugin and aws-ofi-nccl load")
		default:
			v.Changes = append(v.Changes, fmt.Sprintf("inter-node traffic uses %s instead of %s: GPUDirect RDMA is not in use; check the node image's EFA and NVIDIA peer-memory (dmabuf) support", c.InterNode, v.ExpectedInter))
		}
	}
	return v
}
