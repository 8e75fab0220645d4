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
