// Package doctor reads what an NCCL job actually did (its NCCL_DEBUG=INFO log and
// `nvidia-smi topo -m`) and says whether it used NVLink and EFA, or silently fell back, and why.
package doctor

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/efareading"
)

// Line formats, as NCCL prints them (NCCL user guide, "Environment variables: NCCL_DEBUG";
// src/debug.cc, src/init.cc, src/transport/*.cc) and aws-ofi-nccl (src/nccl_ofi_net.cpp):
//
//	host:pid:tid [cudaDev] NCCL INFO <message>
//	host:pid:tid [cudaDev] <function or file>:<line> NCCL WARN <message>
//
// anywhere in a line: launcher prefixes (`[1,0]<stdout>:`, `[rank0]:`, `0: `, `[default0]:`, Ray's
// `(RayTrainWorker pid=…)`), pod names, timestamps and CloudWatch's `| time |` columns before it
// are ignored, and so is everything that does not match (application output, truncated lines).
// Every spelling seen in NCCL 2.4 to 2.28 and aws-ofi-nccl 1.0 to 1.16 logs is read (the corpus in
// testdata/corpus names the public log each spelling was studied in).
var (
	// What stands before " NCCL INFO": the process and, on WARN lines, the source location.
	// The location may be a whole C++ signature with spaces: aws-ofi-nccl's WARN lines
	// ("[0] ncclResult_t nccl_net_ofi_regMr(...):412 NCCL WARN", "int nccl_net_ofi_create_plugin(nccl_net_ofi_plugin_t**):208").
	// NCCL 2.30.7 puts the function after a WARN's location ("transport/net_ib/p2p.cc:688
	// (ncclIbCompletionEventProcess) NCCL WARN", src/debug.cc); people redact the host as
	// "<cluster_name>" (NVIDIA/nccl#952) or "<host>" (#1185).
	ncclPrefix = regexp.MustCompile(`(<[^<>\s:]+>|\[[^\[\]\s:]+\]|[^\s:\]>|)(]+):(\d+):(\d+) \[(\d+)\](?: [^\[]*?:\d+(?: \([^()\s]*\))?)?$`)
	versionRe  = keyed(`NCCL version ([0-9][0-9A-Za-z.+_-]*)`, "NCCL version ")
	// ncclCommInitRank / ncclCommSplit / plain "comm": split communicators add parent, color and
	// key before commId (NCCL ≥ 2.18).
	commRe = keyed(`comm (0x[0-9a-f]+) rank (\d+) nranks (\d+) cudaDev (\d+)(?: nvmlDev \d+)?(?: busId ([0-9a-f]+))?(?: parent (0x[0-9a-f]+))?.*?(?: commId (0x[0-9a-f]+))? - Init (START|COMPLETE)`, "- Init ").byHand(readCommInit)
	// nNodes and localRanks: the ranks NCCL found on each node (NCCL ≥ 2.20.3, src/init.cc; MNNVL
	// follows).
	nodesRe = keyed(`comm (0x[0-9a-f]+) rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank \d+`, "nNodes ").byHand(readCommNodes)
	// NCCL 2.3 names a communicator without "- Init" ("comm 0x… rank 0 nranks 8", or only "rank 0
	// nranks 4": horovod/horovod#110; src/init.cu of v2.3.5).
	oldCommRe = keyed(`^(?:comm (0x[0-9a-f]+) )?rank (\d+) nranks (\d+)\s*$`, "nranks ").byHand(readOldComm)
	// A connection: "Channel 00/0 : 0[0] -> 1[1] via …" (NCCL ≥ 2.12), "Channel 04 : 25[101d0] ->
	// 24[101c0] via …" (2.7 to 2.11: no /N, peer ids rank[busId]), "Ring 00 : 26[2] -> 30[6] via …"
	// and "Ring 00 : 7 -> 8 [send] via …" (2.4 to 2.6), with or without [send]/[receive].
	channelRe  = regexp.MustCompile(`(?:Channel|Ring) (\d+)(?:/\d+)? : (\d+)(?:\[[0-9a-f]+\])? -> (\d+)(?:\[[0-9a-f]+\])?(?: \[(send|receive)\])? via (.+?)\s*$`)
	collChanRe = keyed(`(\d+) coll channels`, "coll channels")
	// NVLS in use: the channel summary's nvls count (2.17+: "32 coll channels, 32 collnet
	// channels, 16 nvls channels, 32 p2p channels, …"; 2.21+'s collnet count only copies the coll
	// one, src/init.cc) and "NVLS comm 0x… headRank 0 nHeads 8 …" (src/transport/nvls.cc).
	nvlsChanRe  = keyed(`(\d+) nvls channels`, "nvls channels")
	nvlsHeadsRe = keyed(`NVLS comm 0x[0-9a-f]+ headRank -?\d+ nHeads (\d+)`, "nHeads ")
	// NCCL 2.17 names the NVLS buffers of a communicator without heads ("NVLS comm 0x… rank 0
	// nranks 8 buffSize …", src/transport/nvls.cc of v2.17.1).
	nvls217Re = keyed(`NVLS comm 0x[0-9a-f]+ rank \d+ nranks \d+ buffSize`, "NVLS comm ")
	// The interface NCCL bound its sockets to, when it is the loopback one: the bootstrap's ("Bootstrap
	// : Using lo:127.0.0.1<0>", 2.8 to 2.23; "Bootstrap: Using …" 2.24+), the socket transport's
	// ("NET/Socket : Using [0]lo:…") and 2.3's ("NET : Using interface lo:…"). NCCL takes lo only
	// when the host has no other interface or NCCL_SOCKET_IFNAME names it (src/misc/socket.cc);
	// lo among other interfaces ("[0]lo:… [1]eth0:…") is not read.
	loopbackRe = gated("Using", `(?:Bootstrap ?: Using|NET/Socket : Using|NET : Using interface) (?:\[\d+\])?lo:(\S+)\s*$`, "lo:")
	// CollNet in use: its connections ("CollNet 00/0 : 3 [send] via COLLNET/SHARP/0/GDRDMA",
	// 2.18+; "Coll 00 : 3 [send] via COLLNET/…", 2.6–2.8; src/transport/coll_net.cc).
	collNetConnRe = keyed(`Coll(?:Net)? \d+(?:/\d+)? : \d+ \[(?:send|receive)\] via (\S+)`, "Coll")
	pluginRe      = keyed(`(?:Initializing|Using) aws-ofi-nccl ([0-9][0-9A-Za-z.+_-]*)`, "Initializing aws-ofi-nccl ", "Using aws-ofi-nccl ")
	loadedRe      = gated("lugin", `NET/Plugin: Loaded net plugin ([^(]+?) \(v?(\d+)\)`, "NET/Plugin: Loaded ")
	// The collective plugin (SHARP): "NET/Plugin: Loaded coll plugin SHARP (v6)" (2.18–2.22),
	// "… collnet plugin SHARP (v8)" (later; NVIDIA/nccl#1584). It is not the net plugin.
	collPluginRe = gated("lugin", `NET/Plugin: Loaded coll(?:net)? plugin ([^(]+?) \(v?\d+\)`, "NET/Plugin: Loaded ")
	usingNetRe   = gated("Using ", `Using network (.+)$`, "Using network ")
	// NCCL 2.3: "Using internal Network Socket", "Using external Network AWS Libfabric".
	usingNet23Re = gated("Using ", `Using (internal|external) Network (.+)$`, "Using internal Network ", "Using external Network ")
	// NCCL's socket transport names its interfaces ("NET/Socket : Using [0]eth0:10.0.0.1<0>") when
	// it is the network, even where no "Using network" line follows (an excerpt, old versions).
	socketUsingRe = gated("Using ", `NET/Socket : Using (.+)$`, "NET/Socket : Using ")
	// NCCL's IB transport finding no device, before it tries sockets (2.4 and later).
	ibNoDeviceRe = gated("NET/IB", `NET/IB ?: No device found`, "No device found")
	timingsRe    = gated("timings", `Init timings.*? total ([0-9.]+) \(.*?bootstrap ([0-9.]+)`, "Init timings").byHand(readInitTimings)
	// NCCL ≥ 2.23 prints its bootstrap's own total in the default subsystems ("Bootstrap timings
	// total 0.160902 (create …, send …, recv …, ring …, delay …)", src/bootstrap.cc); the Init
	// timings line needs the PROFILE subsystem (nccl-tests #311 and #319 show both).
	bootTimingsRe = gated("timings", `Bootstrap timings total ([0-9.]+)`, "Bootstrap timings total ")
	// External network plugins NCCL names itself: "P2P plugin IBext_v8" (2.23: "P2P plugin v8
	// IBext_v8"), "Plugin Path : …/libnccl-net.so", "Successfully loaded external (network) plugin
	// …" (2.27, 2.28), and the plugin NCCL assigned a communicator ("Assigned NET plugin IB to
	// comm", 2.27+: the one actually used, after any that failed).
	p2pPluginRe   = gated("lugin", `P2P plugin (?:v\d+ )?(\S+)`, "P2P plugin ")
	pluginPathRe  = gated("lugin", `Plugin Path : (\S+)`, "Plugin Path : ")
	extLoadedRe   = gated("lugin", `Successfully loaded external (?:network )?plugin (.+)$`, "Successfully loaded external ")
	assignedRe    = gated("lugin", `Assigned NET plugin (.+) to comm`, "Assigned NET plugin ")
	internalNetRe = gated("lugin", `NET/Plugin ?: (?:No plugin found|Could not find:? libnccl-net\.so)|Using internal [Nn]etwork plugin`, "NET/Plugin", "Using internal ")
	// aws-ofi-nccl ≥ 1.14 names the instance type in its tuner line ("NCCL_OFI_TUNER is not
	// available for platform : g7e.8xlarge, Fall back to NCCL's tuner"); its ≥ 1.18 "Plugin
	// selected platform: AWS" names a platform family, not a type, and says nothing more.
	tunerPlatformRe = keyed(`NCCL_OFI_TUNER is not available for platform : ([A-Za-z0-9.-]+)`, "NCCL_OFI_TUNER is not available")
	// NCCL ends some of these lines with a period ("NCCL_IB_DISABLE set by environment to 1.").
	envSetRe = keyed(`((?:NCCL|FI)_[A-Z0-9_]+) set by environment to (\S+?)\.?$`, "set by environment to ")
	// What aws-ofi-nccl announces: the platform it tuned for ("p4d.24xlarge", or "P4d" before 1.5),
	// the provider and NICs it selected, and each variable it set itself.
	platformRe  = gated("NET/OFI", `NET/OFI Running on (\S+?) platform`, "NET/OFI Running on ")
	providerRe  = gated("NET/OFI", `NET/OFI Selected [Pp]rovider is ([A-Za-z0-9_;-]+)`, "NET/OFI Selected ")
	nicsRe      = keyed(`found (\d+) nics`, "nics")
	pluginSetRe = gated("NET/OFI", `NET/OFI (?:Running on \S+ platform, )?Setting ([A-Z][A-Z0-9_]+) (?:environment variable )?to (\S+)`, "Setting ")
	pluginAddRe = gated("NET/OFI", `NET/OFI Adding ([A-Z][A-Z0-9_]+)=(\S+) to environment`, "NET/OFI Adding ")
	// aws-ofi-nccl 1.15: "NET/OFI Setting NCCL_PROTO='simple' to prevent data corruption (reason: …)"
	// (src/nccl_ofi_net.cpp of v1.15.0).
	pluginSetQuotedRe = gated("NET/OFI", `NET/OFI Setting ([A-Z][A-Z0-9_]+)='([^']*)'`, "Setting ")
	// aws-ofi-nccl turning GPUDirect RDMA off by itself: "NET/OFI Could not disable CUDA API usage
	// for HMEM, disabling GDR" (INFO), "NET/OFI GDR disabled on GDR-supported instance type %s" (WARN).
	gdrOffRe     = gated("NET/OFI", `NET/OFI .*(?:disabling GDR|GDR disabled)`, "disabling GDR", "GDR disabled")
	pluginFailRe = keyed(`No eligible providers were found|aws-ofi-nccl initialization failed|Initializing plugin failed|Only EFA provider is supported|Could(?:n't| not) find any optimal provider|provider efa output empty list|Invalid type of PCI bus`,
		"No eligible providers", "initialization failed", "Initializing plugin failed", "Only EFA provider", "find any optimal provider", "provider efa output", "Invalid type of PCI bus")
	cudaErrorRe  = keyedBy(`(?i)cuda (?:error|failure) (\d+)|'system not yet initialized'|system not yet initialized`, mayBeCUDAError)
	unreachableR = keyed(`FI_EHOSTUNREACH|Unresponsive receiver|EHOSTUNREACH`, "EHOSTUNREACH", "Unresponsive receiver")
	// What a job's traceback or launcher output says of an NCCL failure, with or without
	// NCCL_DEBUG=INFO (PyTorch's "NCCL error in: …ProcessGroupNCCL.cpp:1970, unhandled system error
	// (…), NCCL version 2.19.3", the ncclResult name, NCCL's "Last error:" detail, its watchdog).
	ncclErrorInRe = keyed(`NCCL error in: (\S+:\d+), (.+?)(?:, NCCL version ([0-9][0-9A-Za-z.+_-]*))?\s*$`, "NCCL error in: ")
	// PyTorch prints the result as "ncclSystemError: System call (e.g. socket, malloc) …": the
	// name, a colon and NCCL's sentence. A name in a sentence of one's own is not a record.
	resultRe = keyed(`\b(ncclSystemError|ncclInternalError|ncclRemoteError|ncclUnhandledCudaError|ncclInvalidUsage|ncclInvalidArgument|ncclTimeout): [A-Z]`,
		"ncclSystemError: ", "ncclInternalError: ", "ncclRemoteError: ", "ncclUnhandledCudaError: ", "ncclInvalidUsage: ", "ncclInvalidArgument: ", "ncclTimeout: ")
	// PyTorch's asynchronous check: "[Rank 2] found async exception when checking for NCCL
	// errors: NCCL error: remote process exited or there was a network error, NCCL version 2.22.3"
	// (a ProcessGroupNCCL.cpp log record; deepspeedai/DeepSpeed#6875).
	asyncErrorRe = keyed(`ProcessGroupNCCL\.cpp:\d+\].*?NCCL error: (.+?)(?:, NCCL version ([0-9][0-9A-Za-z.+_-]*))?\s*$`, "ProcessGroupNCCL.cpp:")
	// libfabric's own log lines (FI_LOG_LEVEL=warn): "libfabric:PID:EPOCH:efa:core:fn():506<warn> …"
	// (libfabric ≤ 1.18), "libfabric:PID:EPOCH::efa:ep_ctrl:fn():1410<warn> …" (an empty domain
	// field first), "libfabric:PID:EPOCH::core:core:fi_getinfo_():1392<warn> fi_getinfo: provider
	// efa output empty list" (aws/aws-ofi-nccl#346, #715). The provider, then the message.
	libfabricRe = keyed(`libfabric:\d+:\d+:(?:[\w-]*:)?([\w-]+):[\w-]+:[^<]*<warn>\s*(.*)$`, "libfabric:")
	// nccl-tests' own failures (src/common.h): "host: Test NCCL failure common.cu:1204 'unhandled
	// cuda error …'", "Test CUDA failure …", " .. host pid 757466: Test failure common.cu:915",
	// "Test timeout (60s) common.cu:…", and before 2019 "NCCL failure all_reduce.cu:95 '…'"
	// (NVIDIA/nccl-tests#5, #322).
	testFailureRe = keyed(`(?:NCCL|CUDA) failure \S+:\d+ '[^']*'|Test failure \S+:\d+|Test timeout \(\d+s\) \S+:\d+`, "failure ", "Test timeout")
	// A hang the framework or NCCL's EP kernels report: PyTorch's "Heartbeat monitor timed out!"
	// and "watchdog got stuck for 480 seconds", NCCL EP (2.30 contrib) "NCCL EP timeout for
	// dispatch receive", "NCCL EP clean barrier timeout", "NCCL EP timeout check failed".
	hangRe = keyed(`Heartbeat monitor timed out|watchdog got stuck|NCCL EP (?:[a-z]+ )*timeout`, "Heartbeat monitor timed out", "watchdog got stuck", "NCCL EP ")
	// A process that crashed beside NCCL's chain: the shell's "Segmentation fault (core
	// dumped)", Open MPI's "Signal: Segmentation fault (11)", UCX's "Caught signal 11
	// (Segmentation fault: …)", PyTorch elastic's "Signal 11 (SIGSEGV) received by PID 71", and
	// the same for SIGBUS ("Bus error", a full /dev/shm's mapping).
	crashRe      = keyed(`Segmentation fault|\bSignal \d+ \((?:SIGSEGV|SIGBUS)\)|\bBus error\b`, "Segmentation fault", "SIGSEGV", "SIGBUS", "Bus error")
	shmSegmentRe = keyed(`Error while creating shared memory segment (\S+) \(size (\d+)\)`, "shared memory segment ")
	watchdogRe   = keyed(`Watchdog caught collective operation timeout: (WorkNCCL\(.*?\)) ran for (\d+) milliseconds`, "Watchdog caught ")
	netDevice    = regexp.MustCompile(`/[0-9]+\b`)
	hexNumber    = regexp.MustCompile(`0x[0-9a-fA-F]+`)
)

// Log is what a parse found.
type Log struct {
	// EFA are the EFA counter blocks of a gpucluster benchmark job's log (nil: none).
	EFA          *efareading.Readings
	Lines        int // lines read
	NCCLLines    int // lines that were NCCL output
	Version      string
	Plugin       string // net plugin name (e.g. "AWS Libfabric"), "" for NCCL's internal one
	PluginVer    string
	Network      string // "Using network …": AWS Libfabric, Socket, IB
	NoProviders  bool   // aws-ofi-nccl: "No eligible providers were found"
	Unreachable  []string
	CUDAErrors   []string
	Env          map[string]string // variables NCCL reports as set by the environment
	Comms        map[string]*Comm  // by commId (or comm pointer when NCCL prints no commId)
	BootstrapSec float64           // the slowest bootstrap of the Init timings lines
	InitSec      float64
	Warnings     []string
	// Platform is the instance type aws-ofi-nccl says it runs on ("" when it says none).
	Platform string
	// Provider and NICs are what aws-ofi-nccl selected ("efa", 32).
	Provider string
	NICs     int
	// PluginSet are the variables aws-ofi-nccl set itself: NCCL then reports them "set by
	// environment", yet no user set them.
	PluginSet map[string]string
	// GDROff is aws-ofi-nccl's line turning GPUDirect RDMA off ("" when it did not).
	GDROff string
	// PluginFailure is the line saying aws-ofi-nccl could not start ("" when it did).
	PluginFailure string
	// PluginPath is the external plugin library NCCL loaded ("Plugin Path : …"), "" if unnamed.
	PluginPath string
	// Assigned is the net plugin NCCL assigned the communicators (NCCL ≥ 2.27), the last named.
	Assigned string
	// InternalNet: NCCL said it found no external plugin and uses its own transports.
	InternalNet bool
	// MNNVL is what NCCL said of multi-node NVLink and NVLS (nil: nothing).
	MNNVL *MNNVL
	// SocketUsing is the "NET/Socket : Using …" line's interfaces ("" when not logged).
	SocketUsing string
	// IBNoDevice is NCCL's "NET/IB : No device found." ("" when not logged).
	IBNoDevice string
	// Loopback is the first line saying NCCL bound its sockets to lo ("" when none does).
	Loopback string
	// NetFile is the first source file of an NCCL network transport an error names
	// (transport/net_ib.cc, transport/net_socket.cc): the network when no line names it.
	NetFile string
	// CollNetPlugin is the collective plugin NCCL loaded (SHARP), "" if none.
	CollNetPlugin string
	pluginNamed   bool // NCCL named the plugin it loaded
	seen802       bool // a CUDA 802 line is among CUDAErrors
	warned        map[string]bool
	// Failures a traceback or launcher output reports, with or without NCCL INFO lines.
	Failures Failures
	// JoinedLines are the lines that held several NCCL records (a terminal-wrapped paste joins
	// them): each record was read on its own.
	JoinedLines []int
	// CutLines are lines longer than maxLine, read only in their first maxLine bytes.
	CutLines []CutLine
	// UnreadLines are the numbers of lines skipped as binary (not UTF-8, or holding NUL).
	UnreadLines []int
}

// CutLine is one over-long line: its number and how many bytes past maxLine were not read.
type CutLine struct {
	Line     int   `json:"line"`
	BytesCut int64 `json:"bytesCut"`
}

// Comm is one communicator.
type Comm struct {
	ID string
	// Parent is the communicator this one was split from (ncclCommSplit), "" for a root one.
	Parent string
	// Excerpt: the log holds this communicator's connections but not its Init lines (a pasted
	// excerpt): ranks, nodes and hosts are unknown.
	Excerpt    bool
	Ranks      int
	Nodes      int // from "nNodes", 0 when NCCL did not print it
	LocalRanks int
	Channels   int
	// NVLSChannels and NVLSHeads say NVLink SHARP was set up (0: not logged); CollNet counts
	// the CollNet connections and CollNetVia names their transport.
	NVLSChannels, NVLSHeads int
	// NVLSInUse: NCCL set up the communicator's NVLS buffers ("NVLS comm 0x… headRank … nHeads",
	// which from 2.22 it does at the first collective that runs over NVLS); the channel count alone
	// says only that NVLS is supported.
	NVLSInUse  bool
	CollNet    int
	CollNetVia string
	rankHost   map[int]string  // written by setHost only
	hostBits   []uint64        // the ranks below hostBitRanks rankHost holds, one bit each (hostKnown)
	rankProc   map[int]procKey // the process that logged each rank's Init or shape line
	rankDev    map[int]int
	Edges      map[string]int  // "intra|inter transport" → connections seen, summed from Peers once the log is read
	Peers      map[peerKey]int // rank pair and transport → channels
	seen       wordSet         // channel, from, to already counted (firstSeen): both ends log a NET connection
	seenWide   map[[3]int]bool // those whose numbers do not fit connKey
}

type peerKey struct {
	From, To int
	Where    string
	Via      string
}

// ErrNotNCCL is returned for input that holds no NCCL output.
type ErrNotNCCL struct{ Reason string }

func (e ErrNotNCCL) Error() string { return e.Reason }

// maxEvidence bounds the lines kept as evidence of one kind: a log repeats its errors.
const maxEvidence = 20

// is802 says whether a CUDA error line is fabric manager's "system not yet initialized".
func is802(e string) bool {
	return strings.Contains(e, "802") || strings.Contains(strings.ToLower(e), "system not yet initialized")
}

// maxLine bounds what is kept of one line; the rest of a longer line is cut and reported.
const maxLine = 1 << 20

// Parse reads an NCCL_DEBUG=INFO log of any number of ranks, interleaved.
func Parse(r io.Reader) (*Log, error) {
	l := &Log{Env: map[string]string{}, Comms: map[string]*Comm{}, PluginSet: map[string]string{}}
	// The communicator each thread (host:pid:tid) and, failing that, each process (host:pid) is
	// initialising: NCCL initialises a communicator in one thread, so concurrent inits in one
	// process (process groups created together) stay apart.
	current := currentComms{byKey: map[procKey]*Comm{}, gen: 1}
	pending := map[procKey]*Comm{} // connections logged before any Init line of their thread
	var pendingOrder []procKey     // their threads, in the order the log started them
	inits := map[initKey]int{}     // communicators without commId seen per thread and size
	startSeen := map[procKey]bool{}
	binary := 0
	var apply func(rec *record)
	apply = func(rec *record) {
		if rec.newLine {
			l.Lines++
			if rec.cut > 0 {
				l.CutLines = append(l.CutLines, CutLine{Line: l.Lines, BytesCut: rec.cut})
			}
			if rec.binary {
				binary++
				l.UnreadLines = append(l.UnreadLines, l.Lines)
				return
			}
			if rec.joined {
				l.JoinedLines = append(l.JoinedLines, l.Lines)
			}
		}
		if l.Version == "" {
			if m := rec.find(versionRe); m != nil {
				l.Version = m[1]
			}
		}
		if l.Failures.read(rec, l.Lines) {
			l.NCCLLines++ // a traceback's NCCL error is NCCL output, INFO lines or not
			if l.Version == "" {
				l.Version = l.Failures.Version
			}
		}
		if !rec.nccl {
			if efareading.Holds(rec.line) { // gpucluster's EFA counter blocks (a benchmark job's)
				l.EFA = l.EFA.Line(l.Lines, rec.line)
				return
			}
			// A pasted excerpt: connection lines without the process prefix, or without even
			// "NCCL INFO". Read them as connections of an unknown communicator.
			if rec.conn {
				l.NCCLLines++
				c := l.comm(ExcerptComm)
				c.Excerpt = true
				c.Channels = max(c.Channels, rec.channel+1)
				c.edge(rec.host, rec.printer, rec.channel, rec.from, rec.to, rec.where, rec.via)
			}
			return
		}
		l.NCCLLines++
		proc, thread := procKey{rec.host, rec.pid, ""}, procKey{rec.host, rec.pid, rec.tid}
		l.Failures.records.readNCCL(rec)
		l.parseMessage(rec)
		c := rec.find(commRe)
		if c == nil {
			if o := rec.find(oldCommRe); o != nil {
				// A 2.3 communicator line: a START without commId, cudaDev unknown.
				c = []string{o[0], o[1], o[2], o[3], "", "", "", "", "START"}
			}
		}
		if c != nil {
			id := c[7]
			if id == "" {
				// No commId (NCCL before 2.10): the pointer differs in every process, so the
				// ranks of one communicator are those with its size, in their thread's order.
				key := initKey{thread, c[3]}
				if c[8] == "START" || !startSeen[thread] {
					inits[key]++
				}
				id = fmt.Sprintf("(no commId: %s ranks, #%d)", c[3], inits[key])
			}
			rank := atoi(c[2])
			comm := l.commOfRank(id, rank, proc)
			comm.Parent = c[6]
			comm.Ranks = atoi(c[3])
			comm.setHost(rank, rec.host)
			if c[4] != "" {
				comm.rankDev[rank] = atoi(c[4])
			}
			if c[8] == "START" {
				startSeen[thread] = true
				current.set(thread, proc, comm)
			} else if !startSeen[thread] {
				// NCCL before 2.9 prints no START and logs the connections first: they belong to
				// the communicator this COMPLETE line names, and so do the thread's later ones.
				if p := pending[thread]; p != nil {
					comm.absorb(p)
					delete(pending, thread)
				}
				current.set(thread, proc, comm)
			}
			return
		}
		comm := current.of(thread, proc, rec.slot, "")
		if comm == nil {
			if n := rec.find(nodesRe); n != nil {
				// Its shape without its Init lines (an excerpt): one communicator per shape and
				// run, the pointer differing in every process.
				comm = l.commOfRank(fmt.Sprintf("(no Init line: %s ranks on %s nodes)", n[3], n[4]), atoi(n[2]), proc)
				comm.Ranks = atoi(n[3])
				comm.setHost(atoi(n[2]), rec.host)
				current.set(thread, proc, comm)
			} else if !strings.Contains(rec.msg, " via ") && !rec.ring && rec.find(nvlsHeadsRe) == nil && rec.find(nvls217Re) == nil && rec.find(collChanRe) == nil {
				return
			}
		}
		if comm == nil {
			if pending[thread] == nil {
				thread = thread.clone() // kept: a connection's record points into its batch (batch.read)
				pending[thread] = newComm("")
				pendingOrder = append(pendingOrder, thread)
			}
			comm = pending[thread] // until an Init line says whose they are
		}
		if n := rec.find(nodesRe); n != nil {
			comm.Nodes, comm.LocalRanks = atoi(n[4]), atoi(n[5])
		}
		if n := rec.find(collChanRe); n != nil {
			comm.Channels = max(comm.Channels, atoi(n[1]))
		}
		if n := rec.find(nvlsChanRe); n != nil {
			comm.NVLSChannels = max(comm.NVLSChannels, atoi(n[1]))
		}
		if n := rec.find(nvlsHeadsRe); n != nil {
			comm.NVLSHeads = max(comm.NVLSHeads, atoi(n[1]))
			comm.NVLSInUse = true
		}
		if rec.find(nvls217Re) != nil {
			comm.NVLSInUse = true
		}
		if n := rec.find(collNetConnRe); n != nil {
			comm.CollNet++
			comm.CollNetVia = deviceNumbers(n[1])
		}
		if rec.conn {
			comm.Channels = max(comm.Channels, rec.channel+1)
			comm.Ranks = max(comm.Ranks, rec.commRanks)
			comm.edge(rec.host, rec.printer, rec.channel, rec.from, rec.to, rec.where, rec.via)
		}
		if rec.ring {
			comm.Channels = max(comm.Channels, rec.rings, rec.ringChannel+1)
		}
	}
	// A plain connection line of a thread whose communicator is known is apply's hot path, read
	// from its small record: it counts, ends its thread's error chain, and is an edge of that
	// communicator; nothing else in apply reads such a line. Any other (no communicator yet,
	// the line after "Last error:") is applied whole. TestCompactConnectionsChangeNothing
	// holds the two equal.
	applyConn := func(c *connRec, text string, via *placed, answer *threadAnswer) {
		host, pid, tid := c.process(text)
		thread, proc := procKey{host, pid, tid}, procKey{host, pid, ""}
		var comm *Comm
		if !l.Failures.lastErrorNext {
			// The batch's earlier answer for the thread, while no set has changed any since.
			if answer != nil && answer.gen == current.gen {
				comm = answer.comm
			} else {
				comm = current.of(thread, proc, int(c.slot), c.threadKey(text))
				if answer != nil {
					answer.comm, answer.gen = comm, current.gen
				}
			}
		}
		if comm == nil {
			rec := c.record(text, via)
			apply(&rec)
			return
		}
		l.Lines++
		l.NCCLLines++
		l.Failures.records.endChain(thread)
		comm.Channels = max(comm.Channels, int(c.channel)+1)
		comm.Ranks = max(comm.Ranks, int(c.commRanks))
		comm.edge(host, int(c.printer), int(c.channel), int(c.from), int(c.to), via.where, via.name)
	}
	err := eachRecord(r, apply, applyConn)
	if err != nil {
		return nil, err
	}
	// Connections never claimed by an Init line: the log is an excerpt. They are absorbed in
	// the log's order: where two threads name one rank on different hosts (excerpts of several
	// runs), the first to log it decides, as it does within a communicator.
	for _, thread := range pendingOrder {
		p := pending[thread]
		if p == nil {
			continue // claimed by an Init line
		}
		delete(pending, thread) // a thread started again after a claim is listed twice
		x := l.comm(ExcerptComm)
		x.Excerpt = true
		x.absorb(p)
	}
	for _, c := range l.Comms {
		c.countEdges()
	}
	switch {
	case l.Lines == 0:
		return nil, ErrNotNCCL{"the log is empty"}
	case binary > l.Lines/2:
		return nil, ErrNotNCCL{"the input is binary, not a text log"}
	case l.NCCLLines == 0:
		return nil, ErrNotNCCL{fmt.Sprintf("no NCCL output in %d lines: run the job with NCCL_DEBUG=INFO and pass its log", l.Lines)}
	}
	return l, nil
}

// procKey is a process (tid "") or one of its threads: host, pid, tid as NCCL prints them.
type procKey struct{ host, pid, tid string }

// clone is k in memory of its own, to be kept past its batch.
func (k procKey) clone() procKey {
	return procKey{strings.Clone(k.host), strings.Clone(k.pid), strings.Clone(k.tid)}
}

// currentComms is the communicator each thread and process sets up now. The ranks' threads
// log their connections interleaved, and hashing three strings per line cost more than the
// rest of the lookup: recent answers are kept in a small table indexed by the thread's ids
// (threadSlot), two to a slot, the latest first (a job's threads are many, and two of them in
// one slot would each push the other out at every line), and forgotten only when a set can
// change them.
type currentComms struct {
	byKey map[procKey]*Comm
	// gen counts the sets (from 1): an answer given while it was the same still holds.
	gen    uint64
	recent [threadSlots][2]recentComm
	// borrowing are the slots that held an answer taken from a process when it was kept (it
	// may be gone since), listed once each (listed): a set looks at these, not every slot.
	borrowing []int
	listed    [threadSlots]bool
}

// threadSlots is the number of slots of currentComms.recent (a power of two).
const threadSlots = 64

type recentComm struct {
	key    string  // "host:pid:tid", as a plain line holds it (threadKey)
	thread procKey // key's parts
	comm   *Comm
	known  bool
	own    bool // the thread's own communicator, not its process's
}

// threadKey is a thread's "host:pid:tid": one string to compare where a plain line holds it
// whole (a host holds no ':', a pid or tid only digits), not three.
func threadKey(thread procKey) string { return thread.host + ":" + thread.pid + ":" + thread.tid }

// newRecent is an answer for thread, its text a copy of its own: a connection's thread points
// into its batch's buffer, which is read again.
func newRecent(thread procKey, comm *Comm, own bool) recentComm {
	key := threadKey(thread)
	p := len(thread.host) + 1
	t := p + len(thread.pid) + 1
	return recentComm{key, procKey{key[:p-1], key[p : t-1], key[t:]}, comm, true, own}
}

// is says whether the entry answers for thread, whose threadKey is key if known ("" if not).
func (e *recentComm) is(thread procKey, key string) bool {
	if key != "" {
		return e.key == key
	}
	return e.thread == thread
}

// set makes comm the thread's and its process's. A thread's own answer changes only with its
// own set, and lives in its slot; an answer taken from the process changes with any set of
// that process, and lives in a slot listed in borrowing. A job's ranks each set their own
// (every thread that sets up a communicator logs its Init line): a set looks at a few slots.
func (c *currentComms) set(thread, proc procKey, comm *Comm) {
	c.gen++
	c.byKey[thread], c.byKey[proc] = comm, comm
	ways := &c.recent[threadSlot(thread.pid, thread.tid)]
	for j := range ways {
		if e := &ways[j]; e.known && e.own && e.thread == thread {
			e.known = false
		}
	}
	kept := c.borrowing[:0]
	for _, i := range c.borrowing {
		borrowed := false
		for j := range c.recent[i] {
			e := &c.recent[i][j]
			switch {
			case !e.known || e.own:
			case e.thread.pid == proc.pid && e.thread.host == proc.host:
				e.known = false
			default:
				borrowed = true
			}
		}
		if c.listed[i] = borrowed; borrowed {
			kept = append(kept, i)
		}
	}
	c.borrowing = kept
}

// of is the thread's communicator, else its process's (nil if neither has one); a thread
// names its process, slot is threadSlot of its ids, and key its threadKey where the caller
// has it at hand ("" if not).
func (c *currentComms) of(thread, proc procKey, slot int, key string) *Comm {
	ways := &c.recent[slot]
	if e := &ways[0]; e.known && e.is(thread, key) {
		return e.comm
	}
	if e := ways[1]; e.known && e.is(thread, key) {
		ways[0], ways[1] = e, ways[0]
		return e.comm
	}
	comm, own := c.byKey[thread]
	if !own {
		comm = c.byKey[proc]
	}
	if !own && !c.listed[slot] {
		c.listed[slot] = true
		c.borrowing = append(c.borrowing, slot)
	}
	ways[0], ways[1] = newRecent(thread, comm, own), ways[0]
	return comm
}

// threadSlot is a thread's place in currentComms.recent: a hash of the last two digits of its
// pid and tid, which tell a host's threads apart (a collision costs one map lookup, not a
// wrong answer). The digits are mixed whole (splitmix64's finaliser): a job's ids are close
// together, and one multiplication put a third of a p5 job's threads in another's slot.
func threadSlot(pid, tid string) int {
	h := uint64(lastBytes(pid))<<16 | uint64(lastBytes(tid))
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return int((h ^ h>>31) & (threadSlots - 1))
}

// lastBytes is s's last two bytes as one number.
func lastBytes(s string) uint16 {
	switch len(s) {
	case 0:
		return 0
	case 1:
		return uint16(s[0])
	}
	return uint16(s[len(s)-2])<<8 | uint16(s[len(s)-1])
}

// initKey counts a thread's communicators of one size that have no commId.
type initKey struct {
	thread procKey
	size   string
}

// ExcerptComm is the id of the communicator that collects connections logged without their
// communicator's Init lines.
const ExcerptComm = "(excerpt: no Init lines)"

// commOfRank is the communicator of id whose rank the process holds or that has no process
// for that rank yet, creating it: a log holding two runs of one job (two pastes, a job run
// twice) names every communicator twice without a commId to tell them apart, and a rank that
// another process already holds is the next run's. Runs after the first get " (run N)".
func (l *Log) commOfRank(id string, rank int, proc procKey) *Comm {
	for run := 1; ; run++ {
		key := id
		if run > 1 {
			key = fmt.Sprintf("%s (run %d)", id, run)
		}
		c := l.comm(key)
		if p, held := c.rankProc[rank]; !held || p == proc {
			c.rankProc[rank] = proc
			return c
		}
	}
}

// comm returns the communicator of an id, creating it.
func (l *Log) comm(id string) *Comm {
	c := l.Comms[id]
	if c == nil {
		c = newComm(id)
		l.Comms[id] = c
	}
	return c
}

func newComm(id string) *Comm {
	return &Comm{ID: id, rankHost: map[int]string{}, rankProc: map[int]procKey{}, rankDev: map[int]int{}, Edges: map[string]int{}, Peers: map[peerKey]int{}, seenWide: map[[3]int]bool{}}
}

// usedLibfabric says whether any connection went through aws-ofi-nccl's Libfabric transport.
func (l *Log) usedLibfabric() bool {
	for _, c := range l.Comms {
		for k := range c.Edges {
			if strings.Contains(k, "Libfabric") {
				return true
			}
		}
	}
	return false
}

// transportNamed is the name of the first transport (in the communicators' and the
// transports' order) of the log's connections that starts with prefix ("NET/IBext_v8" →
// "IBext_v8"), "" if none does.
func (l *Log) transportNamed(prefix string) string {
	for _, id := range topology.SortedKeys(l.Comms) {
		for _, key := range topology.SortedKeys(l.Comms[id].Edges) {
			if _, via, _ := strings.Cut(key, "|"); strings.HasPrefix(via, prefix) {
				name, _, _ := strings.Cut(strings.TrimPrefix(via, "NET/"), "/")
				return name
			}
		}
	}
	return ""
}

// absorb takes over the connections another (pending) communicator collected.
func (c *Comm) absorb(o *Comm) {
	c.Channels = max(c.Channels, o.Channels)
	c.Ranks = max(c.Ranks, o.Ranks)
	c.NVLSChannels, c.NVLSHeads, c.NVLSInUse = max(c.NVLSChannels, o.NVLSChannels), max(c.NVLSHeads, o.NVLSHeads), c.NVLSInUse || o.NVLSInUse
	for k, n := range o.Peers {
		c.Peers[k] += n
	}
	o.seen.each(func(k uint64) { c.seen.add(k) })
	for k := range o.seenWide {
		c.seenWide[k] = true
	}
	for rank, host := range o.rankHost {
		if !c.hostKnown(rank) {
			c.setHost(rank, host)
		}
	}
}

// splitNCCL finds "host:pid:tid [dev] [location] NCCL INFO|WARN message" anywhere in a line,
// or a record whose prefix was stripped to its device or to nothing (looseProcess).
func splitNCCL(line string) (host, pid, tid, level, msg string, ok bool) {
	return splitMarked(line, markNCCL(line))
}

// splitMarked is splitNCCL of a line whose markers are known.
func splitMarked(line string, m marks) (host, pid, tid, level, msg string, ok bool) {
	if rest, cut := strings.CutPrefix(strings.TrimLeft(line, " "), "NCCL "); cut && len(rest) > 5 && (rest[:5] == "INFO " || rest[:5] == "WARN ") {
		return "", "", "", rest[:4], rest[5:], true
	}
	for n, from := 0, 0; ; n++ {
		i := m.marker(line, n, from)
		if i < 0 || len(line) < i+11 {
			return unframed(line)
		}
		from = i + 1
		level = line[i+6 : i+10]
		if level != "INFO" && level != "WARN" || line[i+10] != ' ' {
			continue
		}
		_, host, pid, tid, ok := processPrefix(line[:i])
		if !ok {
			if host, ok = looseProcess(line[:i]); !ok {
				continue
			}
		}
		return host, pid, tid, level, line[i+11:], true
	}
}

// nextNCCL is where the first " NCCL " at or after from starts, -1 if none. It looks for
// "NCCL " and the space before it: a line holds few N's and many spaces, and a search is as
// fast as its first byte is rare.
func nextNCCL(line string, from int) int {
	for k := from + 1; k < len(line); {
		j := strings.Index(line[k:], "NCCL ")
		if j < 0 {
			return -1
		}
		k += j
		if line[k-1] == ' ' {
			return k - 1
		}
		k++
	}
	return -1
}

// marks are where a line's first " NCCL " markers stand and whether it holds "NCCL version "
// (versionRe's key), found in one pass: splitRecords, splitNCCL and the version test each
// searched the whole line.
type marks struct {
	at      [2]int // the first two markers, -1 where none
	more    bool   // a third or later exists
	version bool
}

func markNCCL(line string) marks {
	m := marks{at: [2]int{-1, -1}}
	n := 0
	for k := 0; k < len(line); k++ {
		j := strings.Index(line[k:], "NCCL ")
		if j < 0 {
			break
		}
		k += j
		if k > 0 && line[k-1] == ' ' {
			if n < len(m.at) {
				m.at[n] = k - 1
			} else {
				m.more = true
			}
			n++
		}
		m.version = m.version || strings.HasPrefix(line[k+len("NCCL "):], "version ")
	}
	return m
}

// marker is the nth marker of line (what the nth nextNCCL finds, from the one before), -1 if none.
func (m marks) marker(line string, n, from int) int {
	switch {
	case n < len(m.at):
		return m.at[n]
	case m.more:
		return nextNCCL(line, from)
	}
	return -1
}

// splitRecords cuts a physical line wherever an NCCL record ("host:pid:tid [dev] NCCL INFO|WARN")
// starts again after the first: a paste from a terminal that wrapped or joined lines holds
// several, and the later ones (a communicator's Init line among them) would be lost as the first
// record's text.
func splitRecords(line string, m marks) []string {
	if m.at[1] < 0 { // the common case
		return nil
	}
	var starts []int
	for from := 0; ; {
		i := nextNCCL(line, from)
		if i < 0 {
			break
		}
		from = i + 1
		if len(line) < i+11 || (line[i+6:i+10] != "INFO" && line[i+6:i+10] != "WARN") {
			continue
		}
		if h, _, _, _, ok := processPrefix(line[:i]); ok {
			starts = append(starts, h) // where the host begins
		}
	}
	if len(starts) < 2 {
		return nil
	}
	records := []string{line[:starts[1]]}
	for k := 1; k < len(starts); k++ {
		end := len(line)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		records = append(records, line[starts[k]:end])
	}
	return records
}

func (l *Log) parseMessage(rec *record) {
	msg := rec.msg
	if strings.HasPrefix(msg, "Channel ") {
		return // the hot path: nothing below applies to channel lines
	}
	if m := rec.find(pluginRe); m != nil {
		l.PluginVer = m[1]
		if !l.pluginNamed {
			l.Plugin = "AWS Libfabric"
		}
	}
	if rec.mentions(wordOFI) {
		l.parsePlugin(rec)
	}
	if l.PluginFailure == "" && rec.find(pluginFailRe) != nil {
		l.PluginFailure = strings.TrimSpace(msg)
	}
	if m := rec.find(loadedRe); m != nil {
		l.Plugin, l.pluginNamed = strings.TrimSpace(m[1]), true // NCCL's own word for the plugin
	}
	if m := rec.find(socketUsingRe); m != nil {
		l.SocketUsing = strings.TrimSpace(m[1])
	}
	if rec.find(ibNoDeviceRe) != nil {
		l.IBNoDevice = strings.TrimSpace(msg)
	}
	if l.Loopback == "" && rec.find(loopbackRe) != nil {
		l.Loopback = strings.TrimSpace(msg)
	}
	if m := rec.find(usingNetRe); m != nil {
		l.Network = strings.TrimSpace(m[1])
	}
	if m := rec.find(usingNet23Re); m != nil {
		l.Network, l.InternalNet = strings.TrimSpace(m[2]), l.InternalNet || m[1] == "internal"
	}
	if m := rec.find(collPluginRe); m != nil {
		l.CollNetPlugin = strings.TrimSpace(m[1])
	}
	if l.NetFile == "" {
		file := rec.loc // a WARN's; a return-code line names its file in the message
		if m := rec.find(chainRe); m != nil {
			file = m[1]
		}
		if networkOfFile(file) != "" {
			l.NetFile = file
		}
	}
	if rec.mentions(wordNoProviders) {
		l.NoProviders = true
	}
	if rec.find(unreachableR) != nil {
		if len(l.Unreachable) < maxEvidence { // the first lines are the evidence; memory stays flat
			l.Unreachable = append(l.Unreachable, strings.TrimSpace(msg))
		}
	}
	if rec.find(cudaErrorRe) != nil {
		if e := strings.TrimSpace(msg); len(l.CUDAErrors) < maxEvidence || is802(e) && !l.seen802 {
			l.CUDAErrors = append(l.CUDAErrors, e)
			l.seen802 = l.seen802 || is802(e)
		}
	}
	if m := rec.find(envSetRe); m != nil {
		l.Env[m[1]] = m[2]
		if m[1] == "NCCL_IBEXT_DISABLE" && m[2] == "1" {
			l.Failures.records.ibextDisabled = true
		}
	}
	if m := rec.find(bootTimingsRe); m != nil {
		if boot, _ := strconv.ParseFloat(m[1], 64); boot > l.BootstrapSec {
			l.BootstrapSec = boot
		}
	}
	if m := rec.find(p2pPluginRe); m != nil && !l.pluginNamed {
		l.Plugin = m[1]
	}
	if m := rec.find(pluginPathRe); m != nil {
		l.PluginPath = m[1]
	}
	if m := rec.find(extLoadedRe); m != nil && !l.pluginNamed {
		l.Plugin = strings.TrimSpace(m[1])
	}
	if m := rec.find(assignedRe); m != nil {
		l.Assigned = strings.TrimSpace(m[1])
	}
	if rec.find(internalNetRe) != nil {
		l.InternalNet = true
	}
	if rec.mentions(wordMNNVL) || rec.mentions(wordNVLS) || rec.mentions(wordNVLinkSHARP) {
		l.parseMNNVL(rec)
	}
	if m := rec.find(timingsRe); m != nil {
		total, _ := strconv.ParseFloat(m[1], 64)
		boot, _ := strconv.ParseFloat(m[2], 64)
		if boot > l.BootstrapSec {
			l.BootstrapSec, l.InitSec = boot, total
		}
	}
	// Every rank prints the same warning, with its own pointers: each is kept once.
	if rec.level == "WARN" && len(l.Warnings) < 20 {
		w, key := strings.TrimSpace(msg), rec.warnKey
		if l.warned == nil {
			l.warned = map[string]bool{}
		}
		if !l.warned[key] {
			l.warned[key] = true
			l.Warnings = append(l.Warnings, w)
		}
	}
}

// parsePlugin reads what aws-ofi-nccl announces about itself.
func (l *Log) parsePlugin(rec *record) {
	if m := rec.find(platformRe); m != nil && l.Platform == "" {
		l.Platform = m[1]
	}
	if m := rec.find(tunerPlatformRe); m != nil && l.Platform == "" {
		l.Platform = m[1]
	}
	if m := rec.find(providerRe); m != nil {
		l.Provider = m[1]
		if n := rec.find(nicsRe); n != nil {
			l.NICs = atoi(n[1])
		}
	}
	if l.GDROff == "" && rec.find(gdrOffRe) != nil {
		l.GDROff = strings.TrimSpace(rec.msg)
	}
	for _, re := range []*keyedRe{pluginSetRe, pluginAddRe, pluginSetQuotedRe} {
		if m := rec.find(re); m != nil {
			// aws-ofi-nccl quotes the value in some versions (`Setting NCCL_PROTO to "simple"`);
			// NCCL's "set by environment to simple" does not.
			l.PluginSet[m[1]] = strings.Trim(m[2], `"'`)
		}
	}
}

// edge records one channel connection where NCCL placed it (placeTransport). The transport
// says where the peer is, even when the peer's own lines are not in the log (one pod's log):
// locality is never guessed from the hosts seen.
// The connection is channel's from → to, logged by printer's process on host.
func (c *Comm) edge(host string, printer, channel, from, to int, where, via string) {
	if host != "" && !c.hostKnown(printer) {
		// The process that logged the connection is the printing rank's: its host is that
		// rank's, the evidence relocate needs where no Init line names it. Cloned: a
		// connection's record points into its batch (batch.read).
		c.setHost(printer, strings.Clone(host))
	}
	if !c.firstSeen(channel, from, to) {
		return
	}
	c.Peers[peerKey{from, to, where, via}]++
}

// hostBitRanks bounds the ranks Comm.hostBits holds (every job's: 2^16 GPUs); others are looked up.
const hostBitRanks = 1 << 16

// setHost records host as rank's.
func (c *Comm) setHost(rank int, host string) {
	c.rankHost[rank] = host
	if uint(rank) < hostBitRanks {
		for len(c.hostBits) <= rank/64 {
			c.hostBits = append(c.hostBits, 0)
		}
		c.hostBits[rank/64] |= 1 << (rank % 64)
	}
}

// hostKnown says whether rankHost holds rank: every connection line asks, and a bit is read
// faster than a map.
func (c *Comm) hostKnown(rank int) bool {
	if uint(rank) >= hostBitRanks {
		_, known := c.rankHost[rank]
		return known
	}
	return rank/64 < len(c.hostBits) && c.hostBits[rank/64]&(1<<(rank%64)) != 0
}

// firstSeen records a connection's channel and ranks, and says whether they are new. They are
// one word where they fit (every real log: 2^16 channels, 2^24 ranks), which hashes three
// times faster than three; a log with larger numbers keeps those apart.
func (c *Comm) firstSeen(channel, from, to int) bool {
	if uint(channel) < 1<<16 && uint(from) < 1<<24 && uint(to) < 1<<24 {
		key := uint64(channel)<<48 | uint64(from)<<24 | uint64(to)
		return c.seen.add(key)
	}
	key := [3]int{channel, from, to}
	if c.seenWide[key] {
		return false
	}
	c.seenWide[key] = true
	return true
}

// relocate places each connection by where its two ranks live, when the log names both ranks'
// hosts: a network connection between ranks of one host is intra-node (NET/Socket between the
// ranks of a bare-metal mpirun on one machine), whatever the transport's name suggests. Without
// both hosts the transport decides, as edge does.
func (c *Comm) relocate() {
	moved := false
	for k, n := range c.Peers {
		from, okF := c.rankHost[k.From]
		to, okT := c.rankHost[k.To]
		// NCCL's own count of one node (nNodes 1) places every connection within it: an
		// UltraServer's clique is one node to NCCL, its P2P/MNNVL connections intra-node.
		if k.Where != "inter" || c.Nodes != 1 && (!okF || !okT || from != to) {
			continue
		}
		delete(c.Peers, k)
		k.Where = "intra"
		c.Peers[k] += n
		moved = true
	}
	if moved {
		c.countEdges()
	}
}

// countEdges sums the connections by where and transport: the rows of the report.
func (c *Comm) countEdges() {
	c.Edges = map[string]int{}
	for k, n := range c.Peers {
		c.Edges[k.Where+"|"+k.Via] += n
	}
}

// Hosts is the number of distinct hosts (pods) the communicator's ranks printed from.
func (c *Comm) Hosts() int {
	seen := map[string]bool{}
	for _, h := range c.rankHost {
		seen[h] = true
	}
	return len(seen)
}

// AllOnDevice0 says every rank drives CUDA device 0: one GPU per process (per pod).
func (c *Comm) AllOnDevice0() bool {
	if len(c.rankDev) < 2 {
		return false
	}
	for _, d := range c.rankDev {
		if d != 0 {
			return false
		}
	}
	return true
}

// SortedComms lists the communicators, largest first, then by id.
func (l *Log) SortedComms() []*Comm {
	out := make([]*Comm, 0, len(l.Comms))
	for _, c := range l.Comms {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ranks != out[j].Ranks {
			return out[i].Ranks > out[j].Ranks
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// atoi is s's value, 0 if s is no number. A count or a rank (a few digits, the most frequent
// number in a log) is read by hand; strconv reads the rest.
func atoi(s string) int {
	if n, ok := fewDigits(s); ok {
		return n
	}
	n, _ := strconv.Atoi(s)
	return n
}

// fewDigits is the value of s when s is one to nine decimal digits (no sign, no overflow).
func fewDigits(s string) (int, bool) {
	if len(s) == 0 || len(s) > 9 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		d := s[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int(d)
	}
	return n, true
}
