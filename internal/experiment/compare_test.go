package experiment

import (
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/bench"
)

// allReduce is a run's result with busbw (GB/s) at 1 GiB and 8 GiB, as bench report writes it.
func allReduce(at1G, at8G float64, status string) *bench.Result {
	r := &bench.Result{Verdict: bench.Verdict{Status: status}}
	r.AtSizes = []bench.SizeBW{{Bytes: 1 << 30, BusBW: at1G}, {Bytes: 8 << 30, BusBW: at8G}}
	r.Rows = []bench.Row{{Bytes: 1 << 30, OutOfPlace: &bench.Measure{BusBW: at1G}}, {Bytes: 8 << 30, OutOfPlace: &bench.Measure{BusBW: at8G}}}
	return r
}

func runsOf(seconds float64, results ...*bench.Result) []Run {
	var out []Run
	for _, r := range results {
		out = append(out, Run{Seconds: seconds, Result: r})
	}
	return out
}

// The field's A/B as modelled: EFA far faster than ENA at the largest size both measured; the
// median of three repeats wins, by the ratio of the medians, and the cost of the result is the
// median run's instance-hours at the price.
func TestCompareAllReduce(t *testing.T) {
	efa := Measured{Stack: "g6e-efa", Nodes: 4, USDPerInstanceHour: 10, Runs: runsOf(360,
		allReduce(30, 40, bench.Pass), allReduce(31, 42, bench.Pass), allReduce(29, 38, bench.Pass))}
	ena := Measured{Stack: "g6e-ena", Nodes: 4, USDPerInstanceHour: 10, Runs: runsOf(720,
		allReduce(9, 10, bench.Pass), allReduce(9, 11, bench.Pass), allReduce(8, 9, bench.Pass))}
	c := Compare([]Measured{efa, ena})
	if c.SizeBytes != 8<<30 || !c.HigherWins || c.Winner != "g6e-efa" || !c.Whole {
		t.Fatalf("comparison %+v", c)
	}
	if f := c.Stacks[0]; f.Median != 40 || f.Min != 38 || f.Max != 42 || f.CostUSD != 4 {
		t.Errorf("g6e-efa: %+v; want median 40 (38–42), $4 (4 nodes × 0.1 h × $10)", f)
	}
	if c.Factor != 4 || !strings.Contains(c.Explanation, "g6e-efa wins") || strings.Contains(c.Explanation, "overlap") {
		t.Errorf("factor %v: %s", c.Factor, c.Explanation)
	}
}

// Stacks are compared where every one measured: a type that stages through host memory sweeps
// to 4 GiB, so a sweep to 16 GiB elsewhere is compared at 4 GiB; here, at 1 GiB, the largest both hold.
func TestCompareAtTheLargestSizeEveryStackMeasured(t *testing.T) {
	short := allReduce(20, 0, bench.Pass)
	short.Rows, short.AtSizes = short.Rows[:1], short.AtSizes[:1]
	c := Compare([]Measured{{Stack: "a", Runs: runsOf(60, allReduce(30, 40, bench.Pass))}, {Stack: "b", Runs: runsOf(60, short)}})
	if c.SizeBytes != 1<<30 || c.Winner != "a" || c.Factor != 1.5 {
		t.Fatalf("comparison %+v", c)
	}
}

// A failed stack keeps the comparison from being whole, and a winner needs two stacks with a
// figure; repeats that overlap are said to be within the spread.
func TestCompareSaysWhatIsMissing(t *testing.T) {
	c := Compare([]Measured{{Stack: "a", Runs: runsOf(60, allReduce(30, 40, bench.Pass))}, {Stack: "b", Failed: "up: quota exceeded"}})
	if c.Whole || c.Winner != "" || !strings.Contains(c.Explanation, "1 of 2 stacks gave a figure") {
		t.Errorf("one stack failed: %+v", c)
	}
	c = Compare([]Measured{{Stack: "a", Runs: runsOf(60, allReduce(30, 40, bench.Pass), allReduce(30, 30, bench.Pass))},
		{Stack: "b", Runs: runsOf(60, allReduce(30, 35, bench.Fail))}})
	if c.Whole || c.Winner != "b" || !strings.Contains(c.Explanation, "within the spread") {
		t.Errorf("overlapping repeats, one run failed: %+v", c)
	}
}

// A training job compares training time, the trainer's own runtime where it printed one:
// lower wins.
func TestCompareTraining(t *testing.T) {
	train := func(wall float64, runtime *float64) *bench.Result {
		return &bench.Result{Verdict: bench.Verdict{Status: bench.Pass}, Training: &bench.Training{WallClockSeconds: wall, TrainerRuntimeSeconds: runtime}}
	}
	rt := 2441.0
	c := Compare([]Measured{{Stack: "g6e-efa", Runs: runsOf(2500, train(2600, &rt))}, {Stack: "g6e-ena", Runs: runsOf(5500, train(5408, nil))}})
	if c.HigherWins || c.Unit != "s" || c.Winner != "g6e-efa" || c.Stacks[0].Median != 2441 || c.Stacks[1].Median != 5408 {
		t.Fatalf("comparison %+v", c)
	}
}
