package topology

import (
	"fmt"
	"strings"
)

// EFA hardware counters: what the EFA devices themselves counted, which says whether a run's
// inter-node traffic crossed EFA whatever NCCL printed. The Linux EFA driver keeps them per port,
// in /sys/class/infiniband/<device>/ports/1/hw_counters/<name>, cumulative 64-bit totals the
// driver never resets (drivers/infiniband/hw/efa/efa_verbs.c, the port stats; amzn-drivers
// kernel/linux/efa): a run's traffic is the difference of two readings. They exist only in the
// host's network namespace (the kernel creates no hw_counters for an RDMA device seen from a
// pod's own namespace: "RDMA/core: Don't expose hw_counters outside of init net namespace"), so a
// reader runs with the host's network and a read-only /sys, as AWS's own readers do (the
// CloudWatch agent's EFA receiver, awsome-distributed-ai's EFA exporter).
const (
	// EFACounterMarker starts every line of a counters block in a job's log: one line per device
	// and reading, `<marker> phase=before|after node=<node> device=<device> <name>=<value> …`.
	EFACounterMarker = "gpucluster-efa-counters"
	EFAPhaseBefore   = "before"
	EFAPhaseAfter    = "after"
)

// EFA counter names a block carries, by what they say.
const (
	// EFATxBytes and EFARxBytes are every byte the device sent and received, RDMA included: on a
	// p4d the driver's tx_bytes equal send_bytes + rdma_read_resp_bytes and rx_bytes equal
	// recv_bytes + rdma_read_bytes (a 4-device p4d dump in awslabs/awsome-distributed-ai). So
	// they measure a run on p4d (aws-ofi-nccl's SENDRECV protocol, RDMA reads) and on p5 and
	// later (its RDMA protocol, RDMA writes) alike, libfabric's headers included. Linux 5.4,
	// EFA driver 1.4.
	EFATxBytes = "tx_bytes"
	EFARxBytes = "rx_bytes"
	// The network counters (Linux 6.17, EFA driver 2.17, Nitro v4 and later; "Add Network HW
	// statistics counters"): packets SRD sent again; SRD timeouts after which it changed the
	// packets' path; remote peers that did not answer (a connection failed); connections found
	// impaired and rate-limited (awsome-distributed-ai's EFA exporter and the EFA user guide,
	// efa-working-monitor). A driver without them prints none: not counted, rather than 0.
	EFARetransPkts         = "retrans_pkts"
	EFARetransTimeouts     = "retrans_timeout_events"
	EFAUnresponsiveRemotes = "unresponsive_remote_events"
	EFAImpairedRemoteConns = "impaired_remote_conn_events"
)

// EFACounterNames are the port counters a block records, in its order.
var EFACounterNames = []string{EFATxBytes, EFARxBytes, EFARetransPkts, EFARetransTimeouts, EFAUnresponsiveRemotes, EFAImpairedRemoteConns}

// EFACounterLine writes one device's reading as a block line; counters the driver did not have
// are left out (values holds those it read).
func EFACounterLine(phase, node, device string, values map[string]uint64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s phase=%s node=%s device=%s", EFACounterMarker, phase, node, device)
	for _, name := range EFACounterNames {
		if v, ok := values[name]; ok {
			fmt.Fprintf(&b, " %s=%d", name, v)
		}
	}
	return b.String()
}

// How a benchmark job gets its nodes' counters. A reader DaemonSet runs on the EFA nodes of a
// benchmark stack with the host's network and a read-only view of the host's /sys (where the
// counters exist) and answers requests a job's worker leaves in a directory both mount from the
// host, under /run (a tmpfs: nothing outlives a reboot). The all-reduce's launcher asks every
// worker, over the ssh it already uses, right before mpirun and right after it, and the answers
// land in its log; a training job has no launcher, so each training pod asks for its own node's
// right before torchrun and right after it, into its own log. bench report reads them there. Nothing polls the devices during the run: the reader only
// lists the directory, five times a second.
const (
	// EFACountersReader is the reader DaemonSet's name and its pods' app.kubernetes.io/name.
	EFACountersReader = "gpucluster-efa-counters"
	// EFACountersDir is the host directory of requests and answers, mounted at the same path in
	// the reader and in the benchmark workers.
	EFACountersDir = "/run/gpucluster/efa-counters"
	// EFACountersHostSys is where the reader mounts the host's /sys.
	EFACountersHostSys = "/host/sys"
	// efaCountersWaitTenths bounds a request's wait for its answer, in tenths of a second.
	efaCountersWaitTenths = 100
)

// ReadsEFACounters says whether the pool's nodes run the counters reader: EFA pools with a
// benchmark job that asks it.
func (p PoolSpec) ReadsEFACounters() bool {
	b := p.Benchmark
	return b != nil && (b.NCCL.EFACounters || b.Train != nil && b.Train.EFACounters)
}

// EFACountersReaderScript is the reader's loop (bash): for each request file it writes every
// device's port counters as block lines (EFACounterLine's format) into an answer file, renamed
// into place whole. DIR and SYS default to the mounted paths; a test points them elsewhere.
func EFACountersReaderScript() string {
	return fmt.Sprintf(`dir=${DIR:-%s}; sys=${SYS:-%s}
while :; do
  for req in "$dir"/*.request; do
    [ -e "$req" ] || continue
    id=${req%%.request}; phase=$(cat "$req"); rm -f "$req"
    case $phase in %s|%s) ;; *) continue ;; esac
    for dev in "$sys"/class/infiniband/*; do
      counters=$dev/ports/1/hw_counters
      [ -d "$counters" ] || continue
      line="%s phase=$phase node=$NODE_NAME device=${dev##*/}"
      for name in %s; do
        [ -r "$counters/$name" ] && line="$line $name=$(cat "$counters/$name")"
      done
      echo "$line"
    done > "$id.part" && mv "$id.part" "$id.answer"
  done
  sleep 0.2
done`, EFACountersDir, EFACountersHostSys, EFAPhaseBefore, EFAPhaseAfter, EFACounterMarker, strings.Join(EFACounterNames, " "))
}

// EFACountersNoReader starts the line a worker prints (on stderr, which the launcher's log
// carries too) when no reader answered it; the worker's host name follows.
const EFACountersNoReader = "gpucluster: no EFA counters reader answered on "

// EFACountersRequestScript is what the launcher runs on a worker over ssh (sh, the phase as $1):
// it leaves a request, waits for the answer and prints it. Without a reader it says so on
// stderr after ten seconds and prints no reading: the report then has none to judge by.
func EFACountersRequestScript() string {
	return fmt.Sprintf(`dir=${DIR:-%s}; id=$dir/$(hostname)-$1-$$
echo "$1" > "$id.part" && mv "$id.part" "$id.request"
i=0
while [ ! -e "$id.answer" ] && [ $i -lt %d ]; do sleep 0.1; i=$((i+1)); done
if [ -e "$id.answer" ]; then cat "$id.answer"; rm -f "$id.answer"
else rm -f "$id.request"; echo "%s$(hostname)" >&2; fi`, EFACountersDir, efaCountersWaitTenths, EFACountersNoReader)
}

// EFACountersRequestEnv carries EFACountersRequestScript in the environment of whoever asks: the
// launcher pipes it to each worker's sh over ssh, a training pod to its own sh. No file is
// written on either side.
const EFACountersRequestEnv = "GPUCLUSTER_EFA_COUNTERS_REQUEST"

// measuredRun runs the measured command ("$@") in the background and waits for it, handing on
// the TERM or INT the script gets (a pod's deletion, the job's deadline) so that the command
// can end its ranks itself; bash waiting on a command in the foreground would take the signal
// only once the command ended. rc is the command's exit code, even after a signal.
const measuredRun = `"$@" & pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
wait "$pid"; rc=$?
while kill -0 "$pid" 2>/dev/null; do wait "$pid"; rc=$?; done`

// EFACountersTrainingScript runs the measured command (its arguments: torchrun and the script)
// between two readings of the pod's own node (bash): a training pod asks the reader on its
// node directly, through the exchange directory it mounts, with the request script in its
// environment (EFACountersRequestEnv). Every pod prints its node's readings in its own log; the
// run's exit code is the command's.
func EFACountersTrainingScript() string {
	return fmt.Sprintf(`read_counters() { printf '%%s\n' "$%s" | sh -s -- "$1"; }
read_counters %s
%s
read_counters %s
exit $rc`, EFACountersRequestEnv, EFAPhaseBefore, measuredRun, EFAPhaseAfter)
}

// EFACountersLauncherScript runs the measured command (its arguments) between two readings of
// every worker's counters (bash). The workers are asked one after another, as the operator's
// hostfile lists them, so their answers do not interleave in the log; the run's exit code is the
// command's.
func EFACountersLauncherScript() string {
	return fmt.Sprintf(`read_counters() {
  for host in $(cut -d' ' -f1 "${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}"); do
    printf '%%s\n' "$%s" | ssh -o BatchMode=yes -o ConnectTimeout=5 ${OMPI_MCA_plm_rsh_args:-} "$host" sh -s -- "$1"
  done
}
read_counters %s
%s
read_counters %s
exit $rc`, EFACountersRequestEnv, EFAPhaseBefore, measuredRun, EFAPhaseAfter)
}
