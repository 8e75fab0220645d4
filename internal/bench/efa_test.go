package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// efaResult reads a fixture as bench report does: its table, the doctor's reading, its counters.
func efaResult(t *testing.T, file string) *Result {
	t.Helper()
	open := func() *os.File {
		f, err := os.Open("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	perf, err := ParsePerf(open())
	if err != nil || len(perf.Tables) != 1 {
		t.Fatalf("%s: %v, %d tables", file, err, len(perf.Tables))
	}
	readings, err := ParseEFACounters(open())
	if err != nil || readings == nil {
		t.Fatalf("%s: counters %v %v", file, readings, err)
	}
	r := NewResult(file, perf.Tables[0], profilePool(t, "p5-efa"), "profile p5-efa", doctorOf(t, file))
	r.AddEFA(readings)
	return r
}

func reasonWith(r *Result, part string) string {
	for _, s := range r.Verdict.Reasons {
		if strings.Contains(s, part) {
			return s
		}
	}
	return ""
}

// TestEFACountersCarryTheVerdict: a run whose EFA devices sent what the all-reduce had to send
// passes and says how much; one whose devices stayed flat fails whatever NCCL printed; SRD's
// timeouts and impaired connections are warnings naming their nodes.
func TestEFACountersCarryTheVerdict(t *testing.T) {
	r := efaResult(t, "efa-p5-2node.txt")
	const gib = int64(1) << 30
	// 2(N-1) x (1+2+4+8+16 GiB, out of place and in place) x 20 iterations
	if want := 2 * 1 * (2 * 31 * gib) * 20; r.EFA == nil || r.EFA.NeededBytes != want || r.Iters != 20 || r.AggIters != 1 {
		t.Fatalf("need %+v, iters %d/%d; want %d", r.EFA, r.Iters, r.AggIters, want)
	}
	if len(r.EFA.Nodes) != 2 || r.EFA.Nodes[0].Devices != 32 || r.EFA.Nodes[1].Devices != 32 {
		t.Errorf("nodes %+v", r.EFA.Nodes)
	}
	if r.Verdict.Status != Pass || reasonWith(r, "the 2 nodes' EFA devices sent 3.07 TB, 1.15×") == "" || reasonWith(r, "× the 2.66 TB the timed iterations had to send") == "" {
		t.Errorf("EFA run: %s %q", r.Verdict.Status, r.Verdict.Reasons)
	}
	if reasonWith(r, "warning") != "" {
		t.Errorf("a clean run warns: %q", r.Verdict.Reasons)
	}

	flat := efaResult(t, "efa-flat-sockets-p5.txt")
	if flat.Verdict.Status != Fail || reasonWith(flat, "did not cross EFA, whatever NCCL printed") == "" || reasonWith(flat, "0.0% of the 2.66 TB") == "" {
		t.Errorf("flat counters: %s %q", flat.Verdict.Status, flat.Verdict.Reasons)
	}

	retrans := efaResult(t, "efa-retrans-p5.txt")
	if retrans.Verdict.Status != Pass ||
		reasonWith(retrans, "warning: 6 retransmit timeout(s)") == "" || reasonWith(retrans, "on ip-10-1-4-87.us-west-2.compute.internal (6)") == "" ||
		reasonWith(retrans, "warning: 2 impaired connection(s)") == "" || reasonWith(retrans, "unresponsive") != "" {
		t.Errorf("retransmits: %s %q", retrans.Verdict.Status, retrans.Verdict.Reasons)
	}
}

// counterLog writes a log of counter blocks for two nodes of one device each.
func counterLog(lines ...[4]any) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("2026-12-01T10:00:00Z [1,0]<stdout>:" + topology.EFACounterLine(l[0].(string), l[1].(string), "rdmap0", l[2].(map[string]uint64)) + "\n")
	}
	return b.String()
}

// TestEFAReadingsThatCannotBeUsed: a device without a reading after the run, a counter that went
// backwards, readings of one node of two, a driver without network counters, and a marker line
// that is not one each say so instead of passing for a measurement.
func TestEFAReadingsThatCannotBeUsed(t *testing.T) {
	tx := func(v uint64) map[string]uint64 {
		return map[string]uint64{topology.EFATxBytes: v, topology.EFARxBytes: v}
	}
	two := Table{Collective: "all_reduce_perf", Iters: 10, Rows: []Row{{Bytes: 1 << 20, OutOfPlace: &Measure{}, InPlace: &Measure{}}}}
	judge := func(log string, nodes int) *Result {
		e, err := ParseEFACounters(strings.NewReader(log))
		if err != nil || e == nil {
			t.Fatalf("%v %v", e, err)
		}
		r := &Result{Table: two, Nodes: nodes, Verdict: Verdict{Status: Pass}}
		r.AddEFA(e)
		return r
	}
	r := judge(counterLog([4]any{"before", "a", tx(5)}, [4]any{"after", "a", tx(4_000_000_000)}, [4]any{"before", "b", tx(5)}), 2)
	if reasonWith(r, "node b device rdmap0 has no reading after the run") == "" || reasonWith(r, "readings from 1 of the run's 2 nodes (a): not judged") == "" {
		t.Errorf("missing reading: %q", r.Verdict.Reasons)
	}
	r = judge(counterLog([4]any{"before", "a", tx(9_000)}, [4]any{"after", "a", tx(10)}, [4]any{"before", "b", tx(1)}, [4]any{"after", "b", tx(4_000_000_000)}), 2)
	if reasonWith(r, "node a device rdmap0: rx_bytes went from 9000 to 10: the counters restarted") == "" {
		t.Errorf("backwards: %q", r.Verdict.Reasons)
	}
	r = judge(counterLog([4]any{"before", "a", tx(1)}, [4]any{"after", "a", tx(4_000_000_000)}, [4]any{"before", "b", tx(1)}, [4]any{"after", "b", tx(4_000_000_000)}), 2)
	// 2(N-1) x 2 MiB x 10 = 41.9 MB needed, 8 GB sent
	if r.Verdict.Status != Pass || reasonWith(r, "network counters (Linux 6.17") == "" || reasonWith(r, "× the 41.94 MB") == "" {
		t.Errorf("no network counters: %s %q", r.Verdict.Status, r.Verdict.Reasons)
	}
	r = judge(counterLog([4]any{"before", "a", tx(1)}, [4]any{"after", "a", tx(4_000_000_000)}, [4]any{"before", "b", tx(1)}, [4]any{"after", "b", tx(90)}), 2)
	if r.Verdict.Status != Fail || reasonWith(r, "node(s) b sent less than a tenth of their share") == "" {
		t.Errorf("one node off EFA: %s %q", r.Verdict.Status, r.Verdict.Reasons)
	}
	r = judge(counterLog([4]any{"before", "a", tx(1)}, [4]any{"after", "a", tx(90)}), 1)
	if r.Verdict.Status != Pass || reasonWith(r, "one node: no traffic had to cross EFA") == "" {
		t.Errorf("one node: %s %q", r.Verdict.Status, r.Verdict.Reasons)
	}
	r = judge("[1,0]<stdout>:"+topology.EFACounterMarker+" phase=during node=a device=rdmap0 tx_bytes=1\n", 2)
	if reasonWith(r, `phase "during" is neither before nor after`) == "" || reasonWith(r, "no node has a reading before and after") == "" {
		t.Errorf("unreadable: %q", r.Verdict.Reasons)
	}
	// A worker no reader answered: its node's readings are missing, whatever the others say.
	r = judge(counterLog([4]any{"before", "a", tx(1)}, [4]any{"after", "a", tx(4_000_000_000)})+
		"2026-12-01T10:00:01Z "+topology.EFACountersNoReader+"job-worker-1\n", 2)
	if reasonWith(r, "no reader answered worker job-worker-1") == "" || reasonWith(r, "workers job-worker-1 got no reading: not judged") == "" {
		t.Errorf("no reader: %q", r.Verdict.Reasons)
	}
	// The pods' nodes, when given, are the run's: two nodes given, one read.
	e, _ := ParseEFACounters(strings.NewReader(counterLog([4]any{"before", "a", tx(1)}, [4]any{"after", "a", tx(4_000_000_000)})))
	spanned := &Result{Table: two, Span: &Span{Pods: 16, Nodes: 2}, Verdict: Verdict{Status: Pass}}
	spanned.AddEFA(e)
	if reasonWith(spanned, "readings from 1 of the run's 2 nodes (a): not judged") == "" {
		t.Errorf("span: %q", spanned.Verdict.Reasons)
	}
	if e, _ := ParseEFACounters(strings.NewReader("no counters here\n")); e != nil {
		t.Errorf("a log without blocks gives readings %+v", e)
	}
}
