package health

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/bench"
)

// judgeNode is a node check's verdict from its job's log.
func judgeNode(check string, p topology.PoolSpec, level int, state jobState, log string) Check {
	if check == topology.HealthCheckDiag {
		return judgeDiag(level, state, log)
	}
	floor, why := topology.NodeBusBWFloor(p)
	return judgeAllReduce(check, p, 1, floor, why, state, log)
}

// judgePair is a pair's verdict from its launcher's log: the node floor's counterpart for the
// network, what bench report judges (published figures, wrong results), and what the EFA
// devices' own counters say the pair carried.
func judgePair(p topology.PoolSpec, state jobState, log string) Check {
	floor, why := topology.PairBusBWFloor(p)
	return judgeAllReduce(topology.HealthCheckPairAllReduce, p, 2, floor, why, state, log)
}

// judgeAllReduce judges an all_reduce_perf log over nodes nodes: it must have finished, with no
// wrong result, and reach floor (GB/s, 0: not judged) at its largest message.
func judgeAllReduce(check string, p topology.PoolSpec, nodes int, floor float64, why string, state jobState, log string) (c Check) {
	c = Check{Name: check}
	perf, err := bench.ParsePerf(strings.NewReader(log))
	if err != nil || len(perf.Tables) == 0 || len(perf.Tables[0].Rows) == 0 {
		c.Status = Unknown
		if state.Ended == "Failed" {
			c.Status = Fail // it ran, and failed before a row: NCCL could not set up
		}
		c.Evidence = fmt.Sprintf("no all_reduce_perf table in the log (job %s%s)%s", orText(state.Ended, "not ended"), reason(state), lastLines(log, 3))
		return c
	}
	t := perf.Tables[0]
	t.GivenNodes = nodes
	r := bench.NewResult(check, t, &p, "pool "+p.Name, nil)
	if e, err := bench.ParseEFACounters(strings.NewReader(log)); err == nil && e != nil && nodes > 1 {
		r.AddEFA(e)
	}
	last := t.Rows[len(t.Rows)-1]
	got := 0.0
	if last.OutOfPlace != nil {
		got = last.OutOfPlace.BusBW
	}
	summary := fmt.Sprintf("busbw %.1f GB/s at %s", got, topology.HumanSize(last.Bytes))
	defer func() { c.Evidence += efaText(r) }()
	switch {
	case r.Verdict.Status == bench.Fail:
		c.Status, c.Evidence = Fail, summary+": "+strings.Join(r.Verdict.Reasons, "; ")
	case state.Ended == "Failed":
		c.Status, c.Evidence = Fail, summary+", then the job failed"+reason(state)+lastLines(log, 3)
	case floor > 0 && got < floor:
		c.Status, c.Evidence = Fail, fmt.Sprintf("%s, under the floor of %.0f GB/s (%s)", summary, floor, why)
	case floor > 0:
		c.Status, c.Evidence = Pass, fmt.Sprintf("%s, over the floor of %.0f GB/s", summary, floor)
	default:
		c.Status, c.Evidence = Pass, summary+" (finished with no wrong result; "+why+")"
	}
	return c
}

func reason(s jobState) string {
	if s.Reason == "" {
		return ""
	}
	return ": " + s.Reason
}

// lastLines are a log's last n lines, to show what it ended with.
func lastLines(log string, n int) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if strings.TrimSpace(strings.Join(lines, "")) == "" {
		return ""
	}
	return "; the log ends: " + strings.Join(lines, " | ")
}

// efaText is what the EFA devices' own counters said of a pair's run: the bytes they sent
// against what the all-reduce had to send, and their warnings.
func efaText(r *bench.Result) string {
	if r.EFA == nil {
		return ""
	}
	var b strings.Builder
	if e := r.EFA; e.NeededBytes > 0 {
		fmt.Fprintf(&b, "; EFA sent %.2f TB, %.2fx the %.2f TB the all-reduce had to send between the nodes", float64(e.TxBytes)/1e12, float64(e.TxBytes)/float64(e.NeededBytes), float64(e.NeededBytes)/1e12)
	}
	for _, reason := range r.Verdict.Reasons {
		if strings.HasPrefix(reason, "EFA counters: ") && (r.Verdict.Status != bench.Fail) {
			b.WriteString("; " + reason)
		}
	}
	return b.String()
}
