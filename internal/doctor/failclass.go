package doctor

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// A failure class is what a failing record's own words support, and nothing firmer: "shm too
// small" needs the shared-memory wording of ENOSPC, an unreachable peer an unreachable error.
// The classes were read off public logs of NCCL 2.3 to 2.30 and aws-ofi-nccl 1.x (NVIDIA/nccl
// #525, #795, #952, #962, #1052, #1235, #1405, #1710, #1814, #1928, #2076; NVIDIA/nccl-tests
// #166, #188, #322; aws/aws-ofi-nccl #24, #44, #161, #346, #889; awslabs/awsome-distributed-ai
// #203, #386) and NCCL's sources (src/misc/socket.cc, src/misc/shmutils.cc, src/transport/net_ib*,
// src/include/checks.h). The first class whose expression matches wins: the specific before the
// general.
var failureClasses = []struct {
	code string
	re   *keyedRe
}{
	// NCCL_NET named a net that did not start, and NCCL does not fall back: "Error: network AWS
	// Libfabric not found." (src/net.cc 2.18 to 2.25, src/plugin/net.cc 2.26; eth-cscs/cscs-docs
	// quotes it from 2.22), "Failed to initialize any NET plugin" (src/plugin/net.cc 2.27 to
	// 2.30), both ncclInvalidUsage. gpucluster sets NCCL_NET on EFA pools so that a missing EFA
	// device or plugin ends the job this way instead of running it over sockets.
	{"nccl-net-unavailable", classKeyed(`Error: network .* not found|Failed to initialize any NET plugin`, "Error: network ", "Failed to initialize any NET plugin")},
	// ≤ 2.9 "Call to posix_fallocate failed : No space left on device"; 2.18–2.21 "Error: failed
	// to extend /dev/shm/nccl-X to N bytes" (no errno printed); ≥ 2.22 the same with ", error: No
	// space left on device (28)"; 2.30 os/linux.cc "fallocate: Failed to extend …".
	{"shm-too-small", classKeyed(`(?i)(?:fallocate|/dev/shm|shared memory).*No space left on device|failed to extend /dev/shm/\S+ to \d+ bytes\s*$`, "No space left on device", "failed to extend /dev/shm/")},
	{"fabric-manager-down", classKeyedBy(`(?i)cuda (?:error|failure) 802\b|system not yet initialized`, mayBeCUDAError)},
	// "Cuda failure 'out of memory'" (include/alloc.h), "Cuda failure 2 'out of memory'"
	// (CUCHECK), nccl-tests' "Test CUDA failure common.cu:880 'out of memory'", "Failed to CUDA
	// calloc N bytes" after it.
	{"cuda-out-of-memory", classKeyed(`(?i)cuda (?:failure|error)(?: \S+)? '?out of memory|Failed to CUDA calloc`, "out of memory", "Failed to CUDA calloc")},
	{"cuda-error", classKeyedBy(`(?i)cuda (?:failure|error)\b`, mayBeCUDAError)},
	// aws-ofi-nccl "Unable to register memory (type = 2) for device 4. RC: -22", "Couldn't
	// register memory region"; NCCL's "ibv_reg_mr failed", "ibv_reg_dmabuf_mr failed".
	{"net-registration-failed", classKeyedBy(`(?i)unable to register memory|couldn't register memory|ibv_reg_(?:dmabuf_)?mr\b.*fail|regMr failed`, func(s string) bool {
		return strings.Contains(s, "egister memory") || strings.Contains(s, "EGISTER MEMORY") || strings.Contains(s, "_reg_") || strings.Contains(s, "_REG_") || strings.Contains(s, "regMr failed")
	})},
	// "NET/IB : Got completion with error 12" (2.4), "… from peer X with error 12, …" (≤ 2.19),
	// "… with status=12 …" (2.20–2.27), "… status=IBV_WC_RETRY_EXC_ERR(12) …" (2.28+), "NET/IB:
	// Got CQE with error" (2.29+); vendor plugins print the same words.
	{"ib-completion-error", classKeyed(`Got (?:completion|CQE)\b.*?(?:with error|status=)`, "Got completion", "Got CQE")},
	{"efa-unreachable", classKeyed(`FI_EHOSTUNREACH|EHOSTUNREACH|Unresponsive receiver`, "EHOSTUNREACH", "Unresponsive receiver")},
	// aws-ofi-nccl "Request 0x… completed with error. RC: 113. Error: 2 (UNDELIVERABLE)", "Request
	// %p (%s) completed with error: err: …"; libfabric's EFA provider "efa_rdm_txe_handle_error():
	// … err: 5, message: …".
	{"efa-completion-error", classKeyed(`NET/OFI .*completed with error|efa_rdm_\w+_handle_error`, "completed with error", "_handle_error")},
	// "socketStartConnect: Connect to X failed : Software caused connection abort", 2.24+
	// "connect to X failed : …" and "… exceeded error retry count", ≤ 2.11 "Call to connect
	// failed : Connection refused".
	{"socket-connect-failed", classKeyedBy(`(?i)connect to \S+ failed|call to connect failed|exceeded (?:error )?retry count`, func(s string) bool {
		return strings.Contains(s, "onnect") || strings.Contains(s, "ONNECT") || strings.Contains(s, "etry count") || strings.Contains(s, "ETRY COUNT")
	})},
	// ≤ 2.14 "Net : Connection closed by remote peer", 2.15+ "socketProgress: Connection closed
	// by remote peer"; "Call to recv from X failed : Broken pipe", "… : Connection reset by peer".
	{"nccl-remote-error", classKeyed(`Connection closed by remote peer|Broken pipe|Connection reset by peer|remote process exited`, "Connection closed by remote peer", "Broken pipe", "Connection reset by peer", "remote process exited")},
	{"shm-segment-failed", classKeyed(`Error while creating shared memory segment`, "Error while creating shared memory segment")},
	// aws-ofi-nccl's own failed calls, when no class above names them: "NET/OFI Creating new
	// endpoint for domain 0x… failed: Invalid argument", "NET/OFI Couldn't open a fabric access
	// domain. RC: -38, ERROR: Function not implemented" (a negative libfabric return code;
	// aws/aws-ofi-nccl#801, #889). The plugin's start-up failures NCCL moves on from
	// (pluginFailRe) are net-plugin-fallback's.
	{"ofi-call-failed", classKeyedBy(`NET/OFI .*(?:\bfailed\b|\bRC: -\d+)`, func(s string) bool {
		return strings.Contains(s, "NET/OFI") && (strings.Contains(s, "failed") || strings.Contains(s, "RC: -")) && pluginFailRe.find(s) == nil
	})},
}

// classKeyed and classKeyedBy are a class's expression behind its keys, as keyed builds them
// (FuzzFailureClassKeysAreNecessary holds them): a WARN's words are tested for the few literals
// before any expression runs.
func classKeyed(expr string, keys ...string) *keyedRe {
	k := &keyedRe{re: regexp.MustCompile(expr), keys: keys}
	k.prefix, _ = k.re.LiteralPrefix()
	return k
}

func classKeyedBy(expr string, may func(string) bool) *keyedRe {
	k := &keyedRe{re: regexp.MustCompile(expr), may: may}
	k.prefix, _ = k.re.LiteralPrefix()
	return k
}

// classifyFailure is the class a failing record's text supports, "" when none does.
func classifyFailure(text string) string {
	for _, c := range failureClasses {
		if c.re.find(text) != nil {
			return c.code
		}
	}
	return ""
}

// consequenceRe is a WARN that reports a failure seen from its caller: the proxy's "[Proxy
// Service 9] Failed to execute operation Connect from rank 9, retcode 6" (all recent versions),
// "Proxy Call to rank 1 failed (Connect)" (2.12–2.17), "[Service thread] Error encountered
// progressing operation=Connect, res=3, closing connection", "Call to ibv_modify_qp failed with
// error …". It fails the job by itself (a WARN-only log has no chain), as a general failure its
// process's named one explains; retcode or res gives NCCL's result.
var consequenceRe = classKeyed(`Proxy Call to rank \d+ failed|Failed to execute operation|Error encountered progressing operation|Call to \S+ failed`,
	"Proxy Call to rank ", "Failed to execute operation", "Error encountered progressing", "Call to ")

var retcodeRe = regexp.MustCompile(`(?:retcode |res=)(\d+)`)

// resultNames are NCCL's ncclResult_t codes as a return-code chain prints them ("init.cc:1358
// -> 3"); NVIDIA/nccl src/nccl.h.in. 7 (ncclInProgress) is a non-blocking call still running,
// not a failure; 8 (ncclTimeout) is new in 2.30.
var resultNames = map[int]string{
	1: "ncclUnhandledCudaError", 2: "ncclSystemError", 3: "ncclInternalError", 4: "ncclInvalidArgument",
	5: "ncclInvalidUsage", 6: "ncclRemoteError", 8: "ncclTimeout",
}

// chainRe is one line of NCCL's return-code chain, the message of an INFO record: where a call
// returned the error and the code (src/include/checks.h: "%s:%d -> %d", 2.30.7 INFO_LOC adds
// " (function)"; a suffix such as " [Async thread]" or " (strerror)" may follow).
var chainRe = keyed(`^([\w./+-]+\.(?:cc|cu|c|cpp|h)):(\d+)(?: \([^()]*\))? -> (\d+)\b`, " -> ")

// networkOfFile is the network a source file of NCCL's belongs to, for a log whose "Using
// network" line did not survive: the socket transport or the IB verbs one.
func networkOfFile(file string) string {
	switch {
	case strings.Contains(file, "net_socket"):
		return "Socket"
	case strings.Contains(file, "net_ib"):
		return "IB"
	}
	return ""
}

// failure is the records of one class: the first is the evidence.
type failure struct {
	code, evidence string
	count          int
}

// chain is a thread's WARN and the return-code lines after it, while they last.
type chain struct {
	warn       string // the chain's first WARN, "" for a chain whose WARN another thread printed
	classified bool   // a WARN of the chain named its class
	reported   bool
}

// failureLog is what a parse gathers of failures from records (failed records, by class).
type failureLog struct {
	byCode map[string]*failure
	order  []*failure
	chains map[procKey]*chain // by thread
	// named are the processes a WARN of which named its class; general the chains no WARN of
	// their thread named, kept only for processes without a named failure (its chain lines are
	// the same failure, seen from the callers).
	named   map[procKey]bool
	general []generalFailure
	said    map[procKey]bool // processes with a general failure kept
	// ibextDisabled: the user disabled the external IB plugin (NCCL_IBEXT_DISABLE=1), whose init
	// then returns ncclInternalError through NCCL's plugin wrapper ("net.cc:55 -> 3",
	// "plugin/net/net_v9.cc:57 -> 3") before NCCL's own IB transport takes the same NICs
	// (NVIDIA/nccl#676): that chain is no failure.
	ibextDisabled bool
}

// pluginWrapperRe is the source file of NCCL's net plugin loader and its version wrappers.
var pluginWrapperRe = regexp.MustCompile(`^(?:net\.cc|plugin/net\.cc|plugin/net/net_v\d+\.cc)$`)

// generalFailure is a return-code chain whose class its own WARN did not name.
type generalFailure struct {
	proc           procKey
	code, evidence string
}

func (f *failureLog) record(code, evidence string) {
	if f.byCode == nil {
		f.byCode = map[string]*failure{}
	}
	if x := f.byCode[code]; x != nil {
		x.count++
		return
	}
	x := &failure{code: code, evidence: evidence, count: 1}
	f.byCode[code] = x
	f.order = append(f.order, x)
}

// endChain ends the thread's chain, if it writes one: a record that neither continues nor
// starts one (the hot path: most of a log, while no chain is being written).
func (f *failureLog) endChain(thread procKey) {
	if len(f.chains) != 0 {
		delete(f.chains, thread)
	}
}

// readNCCL follows one NCCL record of a thread: a WARN starts or continues its chain (and fails
// by itself when its words name a class), a return-code line continues it and fails the job,
// anything else ends it.
func (f *failureLog) readNCCL(rec *record) {
	m := rec.find(chainRe)
	pluginFailed := rec.level != "WARN" && m == nil && rec.find(pluginFailRe) != nil
	if rec.level != "WARN" && m == nil && !pluginFailed {
		f.endChain(procKey{rec.host, rec.pid, rec.tid})
		return
	}
	if f.chains == nil {
		f.chains, f.named, f.said = map[procKey]*chain{}, map[procKey]bool{}, map[procKey]bool{}
	}
	thread, proc := procKey{rec.host, rec.pid, rec.tid}, procKey{rec.host, rec.pid, ""}
	msg := strings.TrimSpace(rec.msg)
	if rec.level == "WARN" {
		c := f.chains[thread]
		if c == nil {
			c = &chain{warn: msg}
			f.chains[thread] = c
		}
		switch code := rec.class; {
		case code != "":
			f.record(code, msg)
			c.classified, f.named[proc] = true, true
		case !c.reported && consequenceRe.find(msg) != nil:
			result := 0
			if m := retcodeRe.FindStringSubmatch(msg); m != nil {
				result = atoi(m[1])
			}
			evidence := c.warn
			if evidence != msg {
				evidence += " (then " + msg + ")"
			}
			f.general = append(f.general, generalFailure{proc, resultCode(result), evidence})
			c.reported = true
		case rec.find(pluginFailRe) != nil:
			// The net plugin failed to start: NCCL's own chain follows, and NCCL carries on
			// with its internal network (net-plugin-fallback says so), so the job did not fail.
			c.classified = true
		}
		return
	}
	if pluginFailed {
		// The plugin's failure at INFO ("NET/OFI Invalid type of PCI bus returned 0"): the
		// chain after it is NCCL moving on to its next plugin.
		f.chains[thread] = &chain{classified: true}
		return
	}
	code := atoi(m[3])
	name, failed := resultNames[code]
	if !failed {
		return
	}
	c := f.chains[thread]
	if c == nil && code == 3 && f.ibextDisabled && pluginWrapperRe.MatchString(m[1]) {
		f.chains[thread] = &chain{classified: true} // the disabled plugin declining; NCCL moves on
		return
	}
	switch {
	case c != nil && (c.classified || c.reported):
	case c != nil && c.warn != "":
		f.general = append(f.general, generalFailure{proc, resultCode(code), fmt.Sprintf("%s (then %s:%s -> %d, %s)", c.warn, m[1], m[2], code, name)})
		c.reported = true
	default:
		// No WARN before it in this thread (the async thread carries another's error): the
		// chain line is the evidence.
		f.general = append(f.general, generalFailure{proc, resultCode(code), fmt.Sprintf("%s:%s -> %d (%s)", m[1], m[2], code, name)})
	}
}

// settle keeps the general failures of processes no named failure explains, one a process.
func (f *failureLog) settle() {
	for _, g := range f.general {
		if !f.named[g.proc] && !f.said[g.proc] {
			f.said[g.proc] = true
			f.record(g.code, g.evidence)
		}
	}
	f.general = nil
}

// resultCode is the finding of a chain no WARN of which named a class: a remote error says who
// to look at; every other result is NCCL's error in general.
func resultCode(code int) string {
	if code == 6 {
		return "nccl-remote-error"
	}
	return "nccl-error"
}

// failureAdvice is each class's cause and fix.
var failureAdvice = map[string][2]string{
	"shm-too-small": {
		"NCCL could not allocate its shared-memory buffers in /dev/shm: the file system is full (ENOSPC). A container's /dev/shm is 64 MiB unless something larger is mounted there (Docker's default, and Kubernetes' without a memory-backed volume), too small for the buffers NCCL sizes by its channels",
		"in Kubernetes, mount an emptyDir volume with medium: Memory at /dev/shm (gpucluster's training pod template does, sized by the pool's shmSize); with Docker, run with --shm-size=… or --ipc=host",
	},
	"shm-segment-failed": {
		"NCCL could not create a shared-memory segment in /dev/shm; the log does not say why (no \"No space left on device\" line): a full /dev/shm is the commonest cause, a CUDA or permission error while mapping it another",
		"read the WARN line before it for the call that failed; check `df -h /dev/shm` inside the container or pod while the job runs, and mount a memory-backed /dev/shm (Kubernetes: emptyDir medium: Memory) if it is small",
	},
	"fabric-manager-down": {
		"CUDA error 802 (system not yet initialized): NVIDIA Fabric Manager is not running, so the NVSwitch fabric is not set up",
		"run nv-fabricmanager at the node driver's exact version: the EKS AL2023/Bottlerocket NVIDIA images run it on the host; custom images need gpucluster's fabric-manager DaemonSet (fabricManager: daemonset)",
	},
	"cuda-out-of-memory": {
		"the GPU ran out of memory while NCCL allocated its buffers: the application holds nearly all of it (a framework's caching allocator, a second process on the GPU), or NCCL's buffers grow with many channels and communicators",
		"leave GPU memory free for NCCL (lower the framework's memory fraction or batch size), run one process per GPU, and check `nvidia-smi` for other processes on the device",
	},
	"cuda-error": {
		"a CUDA call inside NCCL failed: the error's name says which (an invalid argument or handle, a driver shutting down after another failure, an illegal memory access in the application)",
		"read the first CUDA failure of the log and the WARN lines around it; a driver or device failure shows in `nvidia-smi` and the node's kernel log (Xid)",
	},
	"net-registration-failed": {
		"the network transport could not register memory with the NIC: GPUDirect RDMA is not available (no nvidia-peermem module or dma-buf support in the node's driver and kernel), or the process's locked-memory limit is too low",
		"check the node's GPUDirect RDMA support (the EKS NVIDIA AMIs ship it; `lsmod | grep nvidia_peermem` or a driver with dma-buf) and run with an unlimited memlock limit (ulimit -l unlimited)",
	},
	"ib-completion-error": {
		"an InfiniBand or RoCE work request failed: status 12 (retry exceeded) means the peer's adapter never acknowledged (a link, switch or peer down, or a RoCE path without the right GID or lossless setup); 4 (local protection) a memory registration the adapter could not use (GPUDirect RDMA); 5 (flushed) is a consequence of an earlier error on the queue pair (rdma-core libibverbs/verbs.h, enum ibv_wc_status)",
		"check the links and the fabric's error counters on both hosts (ibstat, ibv_devinfo), and the peer's log for the first failure; on RoCE set NCCL_IB_GID_INDEX to the RoCEv2 GID",
	},
	"efa-unreachable": {
		"EFA packets do not reach the peer: the EFA security group allows traffic in from itself but not out to itself (an egress to 0.0.0.0/0 does not cover EFA), or the nodes are in different subnets",
		"add an egress rule for all traffic to the security group itself (gpucluster's EFA group has both rules) and keep the pool in one subnet",
	},
	"efa-completion-error": {
		"an EFA send or receive failed: the peer process went away, or the EFA path between the two hosts drops packets (its security group, its subnet)",
		"read the peer's log for its first failure; check that the EFA security group allows all traffic to and from itself and that the pool's nodes share one subnet",
	},
	"socket-connect-failed": {
		"a rank could not open a TCP connection to another (NCCL's bootstrap or socket transport): the address it used is not reachable from this host (NCCL_SOCKET_IFNAME picks an interface the peers cannot reach, such as docker0 or lo), a firewall or security group blocks the port, or the peer was not running",
		"set NCCL_SOCKET_IFNAME to the interface the hosts share (in Kubernetes the pod's eth0), allow all TCP between the nodes, and start every rank together",
	},
	"nccl-remote-error": {
		"a peer went away or the network between two ranks failed: NCCL on this rank only saw the connection end",
		"read the log of the rank that failed first (the earliest error, or the one whose process exited), and check the network path between the two hosts",
	},
	"libfabric-efa-warning": {
		"libfabric's EFA provider reported a problem (its own words are the evidence): a missing capability such as GPUDirect RDMA (FI_HMEM), a device it could not open, or a failed operation",
		"read the libfabric line; check the node image's EFA driver, libfabric and aws-ofi-nccl versions go together (`fi_info -p efa` lists the devices) and, in Kubernetes, that the pod has its EFA devices (vpc.amazonaws.com/efa)",
	},
	"libfabric-warning": {
		"libfabric's provider named in the line (not EFA: HPE Slingshot's cxi, verbs, tcp, shm) reported a problem in its own words; the job's network is that provider's, and EFA's advice does not apply",
		"read the libfabric line and that provider's documentation; check that the libfabric the job loads was built with the provider and that FI_PROVIDER names the one the hosts' network needs",
	},
	"process-crashed": {
		"a process of the job crashed (segmentation fault or bus error) beside NCCL's errors: the crash ended the process, and NCCL's errors on the other ranks are its consequence, or the crash followed an NCCL failure that left the process in a bad state. A bus error while NCCL maps /dev/shm is a full /dev/shm",
		"find the first crash in the log and its backtrace (the core dump, or the lines after the signal); check `df -h /dev/shm` for a bus error, and the versions of NCCL, the net plugin and the framework for a segmentation fault",
	},
	"ofi-call-failed": {
		"a call of aws-ofi-nccl into libfabric failed (the plugin's own words name the call, and a negative libfabric return code the reason: -22 invalid argument, -12 out of memory, -38 not implemented by the provider): the provider could not give the plugin what it asked for",
		"read the line: the call and its code; check that the libfabric, its provider and aws-ofi-nccl versions go together (on EFA, the node image's EFA installer) and, in Kubernetes, that the pod has its network devices (vpc.amazonaws.com/efa on EFA)",
	},
	"collective-timeout": {
		"a collective did not complete in time on every rank: one rank stopped taking part (it crashed, hung or lags far behind), or the network stalled",
		"find the rank that did not reach the collective (the first error or exit in the other ranks' logs); raising the timeout only hides a hang",
	},
	"nccl-net-unavailable": {
		"NCCL_NET names the network NCCL must use (gpucluster sets it to aws-ofi-nccl's name on EFA pools, so that a job fails here instead of running over TCP sockets), and no network of that name started: the pod has no EFA device (no vpc.amazonaws.com/efa request, or the EFA device plugin does not run on the node), or the image has no aws-ofi-nccl, or the plugin answers to another name",
		"check, in this order: in Kubernetes, the pod requests vpc.amazonaws.com/efa and `kubectl describe node` lists it allocatable (the EFA device plugin runs on the node, tolerating its taints), and on a bare instance `fi_info -p efa` lists its EFA devices; the image or host carries aws-ofi-nccl (its NET/OFI lines in an NCCL_DEBUG=INFO log); NCCL_NET is a name the plugin answers to (\"" + topology.OFIPluginLegacyName + "\" for every version from 1.7, \"" + topology.OFIPluginName + "\" from 1.13)",
	},
	"nccl-error": {
		"NCCL returned an error to its caller and no narrower cause fits the log's words: the evidence is the error's first WARN line (or, with none before it, its first return-code line), which says which call failed",
		"rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) and pass that log: the lines before the error say what NCCL was doing",
	},
}

// warningOnly are the classes whose records do not prove the job failed: another provider's
// libfabric warning is often one it works around (an interface it skips, a memory type it
// lacks), unlike EFA's, which gpucluster's pools depend on.
var warningOnly = map[string]bool{"libfabric-warning": true}

// addFailure adds one class's finding.
func addFailure(add func(code, severity, evidence, cause, fix string), code, evidence string, count int) {
	a := failureAdvice[code]
	if count > 1 {
		evidence += fmt.Sprintf(" (and %d more record(s) of the kind)", count-1)
	}
	severity := topology.SeverityError
	if warningOnly[code] {
		severity = topology.SeverityWarning
	}
	add(code, severity, evidence, a[0], a[1])
}
