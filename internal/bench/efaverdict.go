package bench

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/internal/efareading"
)

// efaShare: a run whose EFA devices sent less than this share of what its timed iterations had
// to send between nodes did not put its inter-node traffic on EFA. tx_bytes also count
// libfabric's headers, the warmup and the validation iterations, so a run over EFA sends more
// than the need: a tenth of it is a run that went another way (TCP sockets, the wrong devices).
const efaShare = 0.1

// efaFloorPerNode: with no need to compare against (a training run, another test), a multi-node
// run whose nodes' EFA devices sent less than this each crossed nothing over EFA.
const efaFloorPerNode = efareading.FloorPerNode

// AddEFA adds what the EFA devices counted to the result and its verdict: a run whose
// inter-node traffic did not cross EFA fails, whatever NCCL printed; retransmit timeouts,
// impaired connections and unresponsive peers are warnings.
func (r *Result) AddEFA(e *EFAReadings) {
	if e == nil {
		return
	}
	t := e.Traffic()
	r.EFA = t
	v := &r.Verdict
	say := func(format string, a ...any) {
		v.Reasons = append(v.Reasons, "EFA counters: "+fmt.Sprintf(format, a...))
	}
	fail := func(format string, a ...any) { v.Status = Fail; say(format, a...) }
	for _, p := range t.Problems {
		say("%s", p)
	}
	if len(t.Nodes) == 0 {
		say("no node has a reading before and after the run: not judged")
		return
	}
	// The run's nodes: the pods' nodes when they were given (a log's hosts are its pods, several
	// to a node in the pod-per-GPU layout), else every node a reading names, once every worker's
	// reader answered.
	nodes := e.Nodes()
	if r.Span != nil {
		nodes = max(nodes, r.Span.Nodes)
	}
	switch {
	case len(e.NoReader) > 0:
		say("workers %s got no reading: not judged", strings.Join(e.NoReader, ", "))
	case len(t.Nodes) < nodes:
		say("readings from %d of the run's %d nodes (%s): not judged", len(t.Nodes), nodes, nodeNames(t.Nodes))
	case nodes < 2:
		say("one node: no traffic had to cross EFA (its devices sent %s)", bytesText(t.TxBytes))
	default:
		t.NeededBytes, t.NeededHow = r.neededEFABytes(nodes)
		r.judgeEFA(t, nodes, say, fail)
	}
	r.efaEvents(t, say)
}

// judgeEFA holds what the nodes' EFA devices sent to what the run had to send between nodes.
func (r *Result) judgeEFA(t *EFATraffic, nodes int, say, fail func(string, ...any)) {
	if t.NeededBytes == 0 {
		if t.TxBytes < uint64(nodes)*efaFloorPerNode {
			fail("the %d nodes' EFA devices sent %s in all: the inter-node traffic did not cross EFA, whatever NCCL printed", nodes, bytesText(t.TxBytes))
			return
		}
		say("the %d nodes' EFA devices sent %s and received %s", nodes, bytesText(t.TxBytes), bytesText(t.RxBytes))
		return
	}
	need := float64(t.NeededBytes)
	if float64(t.TxBytes) < efaShare*need {
		fail("the %d nodes' EFA devices sent %s, %.1f%% of the %s the timed iterations had to send between nodes (%s): the inter-node traffic did not cross EFA, whatever NCCL printed",
			nodes, bytesText(t.TxBytes), 100*float64(t.TxBytes)/need, bytesText(uint64(t.NeededBytes)), t.NeededHow)
		return
	}
	var low []string
	for _, n := range t.Nodes {
		if float64(n.TxBytes) < efaShare*need/float64(nodes) {
			low = append(low, n.Node)
		}
	}
	if len(low) > 0 {
		fail("node(s) %s sent less than a tenth of their share over EFA (%s each at least): their inter-node traffic went another way",
			strings.Join(low, ", "), bytesText(uint64(t.NeededBytes/int64(nodes))))
		return
	}
	say("the %d nodes' EFA devices sent %s, %.2f× the %s the timed iterations had to send between nodes (%s)",
		nodes, bytesText(t.TxBytes), float64(t.TxBytes)/need, bytesText(uint64(t.NeededBytes)), t.NeededHow)
}

// neededEFABytes is the least an all-reduce's timed iterations had to send out of the nodes in
// all: any all-reduce over N nodes, whose GPUs inside a node reduce over NVLink or PCIe, moves
// at least 2(N-1)/N of each message out of every node (the ring's reduce-scatter and all-gather,
// each (N-1)/N; a tree's reduce and broadcast move as much in all), so 2(N-1) × the message per
// iteration. nccl-tests times each size out of place and in place, iters × agg iters each.
func (r *Result) neededEFABytes(nodes int) (int64, string) {
	op := r.Collective
	if op == "" {
		op = r.Binary
	}
	if op != "all_reduce_perf" || r.Iters == 0 {
		return 0, ""
	}
	var per, runs int64
	for _, row := range r.Rows {
		for _, m := range []*Measure{row.OutOfPlace, row.InPlace} {
			if m != nil {
				per += row.Bytes
				runs++
			}
		}
	}
	if per == 0 {
		return 0, ""
	}
	iters := int64(r.Iters * max(r.AggIters, 1))
	return 2 * int64(nodes-1) * per * iters, fmt.Sprintf("2(N-1)/N of each message out of each of %d nodes, over %d sizes and placements × %d timed iterations", nodes, runs, iters)
}

// efaEvents says what the network counters saw: warnings, or that the driver keeps none.
func (r *Result) efaEvents(t *EFATraffic, say func(string, ...any)) {
	if !t.EventsCounted() {
		say("retransmits, timeouts and impaired connections not counted: the nodes' EFA driver keeps no network counters (Linux 6.17, EFA driver 2.17 and later on Nitro v4)")
		return
	}
	for _, w := range t.Warnings() {
		say("warning: %s", w)
	}
	if t.RetransPkts != nil && *t.RetransPkts > 0 {
		say("%d packet(s) retransmitted", *t.RetransPkts)
	}
}

func nodeNames(nodes []EFANode) string {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Node
	}
	return strings.Join(names, ", ")
}

// bytesText writes a byte count (efareading.BytesText).
var bytesText = efareading.BytesText
