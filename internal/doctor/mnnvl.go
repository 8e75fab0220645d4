package doctor

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// Multi-node NVLink (MNNVL, GB200 UltraServers) and NVLink SHARP (NVLS), as NCCL logs them
// (NVIDIA/nccl, src/init.cc, src/mnnvl.cc, src/transport/nvls.cc; NVML's fabric states in
// src/include/nvmlwrap.h: 0 not supported, 1 not started, 2 in progress, 3 completed). Shapes
// studied in NVIDIA/nccl issues #1769 and #2186 (GB200 NVL72, healthMask 0xaa), #1584 (H100
// without MNNVL: fabric UUID 0.0, cliqueId 0x0), #1925 (the IMEX WARN after CUDA failure 800),
// and pytorch/pytorch#177472 (the NVLS bind failure, CUDA error 401):
//
//	MNNVL busId 0x901000 fabric UUID 3143b15bc2cd192b.28cc9b5473fb5b93 cliqueId 0x7ffe state 3 healthMask 0xaa
//	MNNVL 1 cliqueId 7ffe cliqueSize 72 cliqueRank 5 nvlDomainSize 72     (2.30; ≤ 2.29 ends at cliqueRank)
//	comm 0x5555 rank 0 nRanks 72 nNodes 18 localRanks 4 localRank 0 MNNVL 1
//	NVLS multicast support is available on dev 0 (NVLS_NCHANNELS 24)    ("is not available": 2.27-2.29 add the channels)
//	MNNVL (cliqueSize 8) is available but not working on this system. Check the IMEX channel configuration (/dev/nvidia-caps-imex-channels). …
//	Failed to bind NVLink SHARP (NVLS) Multicast memory of size 1048576 : CUDA error 401 '…'
var (
	fabricRe     = keyed(`MNNVL busId (0x[0-9a-f]+) fabric UUID ([0-9a-f]+\.[0-9a-f]+) cliqueId (0x[0-9a-f]+) state (\d+) healthMask (0x[0-9a-f]+)`, "MNNVL busId ")
	cliqueRe     = keyed(`MNNVL (\d+) cliqueId ([0-9a-f]+) cliqueSize (\d+) cliqueRank (\d+)`, "cliqueSize ")
	commMNNVLRe  = keyed(`nNodes \d+ localRanks \d+ localRank \d+ MNNVL (\d)`, " MNNVL ").byHand(readCommMNNVL)
	nvlsRe       = keyed(`NVLS multicast support is (not )?available on dev (\d+)`, "NVLS multicast support is ")
	mnnvlBrokeRe = keyed(`MNNVL \(cliqueSize (\d+)\) is available but not (?:working|supported) on this system`, "is available but not ")
	nvlsBindRe   = keyed(`Failed to bind NVLink SHARP \(NVLS\) Multicast memory of size (\d+) : CUDA error (\d+)`, "Failed to bind NVLink SHARP")
)

// nvmlFabricCompleted is NVML_GPU_FABRIC_STATE_COMPLETED: the GPU is registered with the NVLink fabric.
const nvmlFabricCompleted = 3

// MNNVL is what the log says of multi-node NVLink and NVLink SHARP; nil when it says nothing.
type MNNVL struct {
	// FabricStates counts the GPUs per NVML fabric state (3: registered with the NVLink fabric).
	FabricStates map[int]int `json:"fabricStates,omitempty"`
	// Cliques are the NVLink cliques the GPUs reported (0x0: none), with the largest clique size.
	Cliques    []string `json:"cliques,omitempty"`
	CliqueSize int      `json:"cliqueSize,omitempty"`
	// On and Off count the communicators that used multi-node NVLink and those that did not.
	On  int `json:"communicatorsWithMnnvl"`
	Off int `json:"communicatorsWithoutMnnvl"`
	// NVLSAvailable and NVLSUnavailable count the devices NCCL found with and without multicast.
	NVLSAvailable   int `json:"nvlsAvailable"`
	NVLSUnavailable int `json:"nvlsUnavailable"`
	// NotWorking is NCCL's warning that the clique is there but IMEX is not; NVLSBindFailed its
	// failure to bind multicast memory.
	NotWorking     string `json:"notWorking,omitempty"`
	NVLSBindFailed string `json:"nvlsBindFailed,omitempty"`
	cliques        map[string]bool
}

// parseMNNVL reads one NCCL message for multi-node NVLink and NVLS.
func (l *Log) parseMNNVL(rec *record) {
	get := func() *MNNVL {
		if l.MNNVL == nil {
			l.MNNVL = &MNNVL{FabricStates: map[int]int{}, cliques: map[string]bool{}}
		}
		return l.MNNVL
	}
	if m := rec.find(fabricRe); m != nil {
		x := get()
		x.FabricStates[atoi(m[4])]++
		if m[3] != "0x0" && !x.cliques[m[3]] {
			x.cliques[m[3]] = true
			x.Cliques = append(x.Cliques, m[3])
			sort.Strings(x.Cliques)
		}
	}
	if m := rec.find(cliqueRe); m != nil {
		x := get()
		x.CliqueSize = max(x.CliqueSize, atoi(m[3]))
	}
	if m := rec.find(commMNNVLRe); m != nil {
		if m[1] == "1" {
			get().On++
		} else {
			get().Off++
		}
	}
	if m := rec.find(nvlsRe); m != nil {
		if m[1] == "" {
			get().NVLSAvailable++
		} else {
			get().NVLSUnavailable++
		}
	}
	if m := rec.find(mnnvlBrokeRe); m != nil && get().NotWorking == "" {
		get().NotWorking = strings.TrimSpace(rec.msg)
		get().CliqueSize = max(get().CliqueSize, atoi(m[1]))
	}
	if rec.find(nvlsBindRe) != nil && get().NVLSBindFailed == "" {
		get().NVLSBindFailed = strings.TrimSpace(rec.msg)
	}
}

// mnnvlFindings say what went wrong with multi-node NVLink or NVLS: always when NCCL says so,
// and, on a type whose NVLink domain spans instances, when NCCL did not use it.
func mnnvlFindings(l *Log, it *catalog.InstanceType, add func(code, severity, evidence, cause, fix string)) {
	x := l.MNNVL
	expected := it != nil && it.MultiNodeNVLink()
	if x == nil {
		return
	}
	if x.NotWorking != "" {
		add("mnnvl-not-working", topology.SeverityError, x.NotWorking,
			fmt.Sprintf("the GPUs are in a multi-node NVLink clique of %d, yet NCCL could not map another node's memory: the process has no IMEX channel (/dev/nvidia-caps-imex-channels); in Kubernetes the pod claims no ComputeDomain channel, or the domain's IMEX daemons are not running on every node; on bare instances the IMEX service is not running or not configured with every node of the job", x.CliqueSize),
			"in Kubernetes, give every pod of the job the ComputeDomain's channel (resourceClaims naming the domain's claim template, and the container's resources.claims; gpucluster's pod template and benchmark do) and check that `kubectl get computedomain` shows it Ready with a daemon on each node; on bare instances, check `nvidia-imex-ctl -N` lists every node; NCCL_MNNVL_ENABLE=0 only to run over EFA instead")
	}
	if x.NVLSBindFailed != "" {
		add("nvls-bind-failed", topology.SeverityError, x.NVLSBindFailed,
			"NCCL could not bind NVLink SHARP multicast memory: on an UltraServer, the job's IMEX domain does not span the ranks (no ComputeDomain channel, or ranks outside it); on an HGX node, fabric manager or the NVSwitches are not ready",
			"on an UltraServer, run the job inside one ComputeDomain with its channel claimed by every pod; elsewhere check that fabric manager runs; NCCL_NVLS_ENABLE=0 runs without NVLS")
	}
	var notReady []string
	for _, state := range slices.Sorted(maps.Keys(x.FabricStates)) {
		if state != nvmlFabricCompleted && state != 0 {
			notReady = append(notReady, fmt.Sprintf("%d GPU(s) in NVML fabric state %d", x.FabricStates[state], state))
		}
	}
	if len(notReady) > 0 {
		add("nvlink-fabric-not-ready", topology.SeverityError, strings.Join(notReady, ", ")+" (3 is registered)",
			"the GPUs had not finished registering with the NVLink fabric when NCCL started (state 1 not started, 2 in progress): the node's NVLink fabric is still coming up or is faulty",
			"wait for `nvidia-smi -q` to show the fabric State Completed on every node before starting jobs; if it stays so, the node's NVLink fabric needs AWS's attention")
	}
	if expected && x.On == 0 && x.Off > 0 && x.NotWorking == "" {
		add("mnnvl-off", topology.SeverityWarning, fmt.Sprintf("%d communicator(s) report MNNVL 0; cliques seen: %s", x.Off, orNone(x.Cliques)),
			fmt.Sprintf("on %s, ranks on different nodes of one UltraServer should meet over NVLink, yet NCCL did not enable multi-node NVLink: NCCL_MNNVL_ENABLE=0, an NCCL older than 2.21, or the ranks are not in one NVLink clique (cliqueId 0x0: no IMEX channel or fabric)", it.Name),
			"in Kubernetes, run the job's pods inside one ComputeDomain (each claiming its channel) on nodes of one UltraServer; anywhere, use NCCL 2.21 or newer with NCCL_MNNVL_ENABLE unset or 1")
	}
	if expected && x.NVLSUnavailable > 0 && x.NVLSAvailable == 0 {
		add("nvls-unavailable", topology.SeverityWarning, fmt.Sprintf("NVLS multicast is not available on %d device(s)", x.NVLSUnavailable),
			"NCCL found no NVLink SHARP multicast support, so all-reduce cannot use the NVLink switches' in-network reduction",
			"check the IMEX daemons (in Kubernetes, the job's ComputeDomain); NCCL_NVLS_ENABLE=1 makes NCCL fail instead of running without NVLS")
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
