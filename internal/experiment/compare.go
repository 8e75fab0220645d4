package experiment

import (
	"fmt"
	"slices"
	"sort"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/bench"
)

// Measured is what the experiment got from one stack: its runs, or the step that stopped it.
type Measured struct {
	Stack string `json:"stack"`
	// Failed is the step that stopped the stack ("up", "verify", "bench run 2 of 3") and why;
	// the stack's runs before it are kept.
	Failed string `json:"failed,omitempty"`
	Runs   []Run  `json:"runs"`
	// InstanceType, Nodes and USDPerInstanceHour price the runs (the plan's on-demand price).
	InstanceType       string  `json:"instanceType"`
	Nodes              int     `json:"nodes"`
	USDPerInstanceHour float64 `json:"usdPerInstanceHour"`
}

// Run is one bench run of a stack.
type Run struct {
	Dir string `json:"dir"`
	// Seconds is the run's wall time, from its start to its job's deletion: the time its nodes
	// were held for it.
	Seconds float64       `json:"seconds"`
	Result  *bench.Result `json:"result,omitempty"` // nil where the run wrote none
}

// Comparison is the experiment's answer: per stack its figure over the repeats, and which wins.
type Comparison struct {
	// Figure is what is compared: "busbw at <size>" (GB/s, higher is better) or "training time"
	// (seconds, lower is better).
	Figure      string   `json:"figure"`
	Unit        string   `json:"unit"`
	HigherWins  bool     `json:"higherWins"`
	SizeBytes   int64    `json:"sizeBytes,omitempty"`
	Stacks      []Figure `json:"stacks"`
	Winner      string   `json:"winner,omitempty"`
	Factor      float64  `json:"factor,omitempty"` // the winner's figure over the next best's (or the inverse, for time): how much it wins by
	Whole       bool     `json:"whole"`            // every stack gave its figure on every repeat, and no run failed
	Explanation string   `json:"explanation"`
}

// Figure is one stack's figure over its repeats.
type Figure struct {
	Stack    string    `json:"stack"`
	Failed   string    `json:"failed,omitempty"`
	Values   []float64 `json:"values"` // per run that gave one, in order
	Median   float64   `json:"median,omitempty"`
	Min      float64   `json:"min,omitempty"`
	Max      float64   `json:"max,omitempty"`
	Verdicts []string  `json:"verdicts"`
	// EFABytes is what the EFA devices carried in the median run, sent and received, when its
	// log recorded the counters (0: not recorded).
	EFABytes uint64 `json:"efaBytes,omitempty"`
	// CostUSD is the cost of the result: the median run's instance-hours (nodes × its wall time)
	// at the plan's price.
	CostUSD float64 `json:"costUSD,omitempty"`
}

// Compare works out the comparison of the stacks' runs. A training job compares training time;
// an all-reduce compares busbw at the largest message size every stack's runs measured.
func Compare(stacks []Measured) Comparison {
	c := Comparison{Whole: true}
	training := false
	for _, s := range stacks {
		for _, r := range s.Runs {
			if r.Result != nil && r.Result.Training != nil {
				training = true
			}
		}
	}
	if training {
		c.Figure, c.Unit = "training time", "s"
	} else {
		c.SizeBytes = commonLargestSize(stacks)
		c.Figure, c.Unit, c.HigherWins = "busbw at "+topology.HumanSize(c.SizeBytes), "GB/s", true
	}
	for _, s := range stacks {
		f := Figure{Stack: s.Stack, Failed: s.Failed}
		if s.Failed != "" {
			c.Whole = false
		}
		type valued struct {
			v   float64
			run Run
		}
		var got []valued
		for _, r := range s.Runs {
			if r.Result == nil {
				f.Verdicts = append(f.Verdicts, "no result")
				c.Whole = false
				continue
			}
			f.Verdicts = append(f.Verdicts, r.Result.Verdict.Status)
			if r.Result.Verdict.Status == bench.Fail { // unknown (no published figure) still measures
				c.Whole = false
			}
			if v, ok := figureOf(r.Result, training, c.SizeBytes); ok {
				f.Values = append(f.Values, v)
				got = append(got, valued{v, r})
			}
		}
		if len(got) > 0 {
			sorted := slices.Clone(got)
			sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].v < sorted[j].v })
			mid := sorted[(len(sorted)-1)/2] // the lower median: a value that was measured
			f.Median, f.Min, f.Max = mid.v, sorted[0].v, sorted[len(sorted)-1].v
			f.CostUSD = mid.run.Seconds / 3600 * float64(s.Nodes) * s.USDPerInstanceHour
			if e := mid.run.Result.EFA; e != nil {
				f.EFABytes = e.TxBytes + e.RxBytes
			}
		} else {
			c.Whole = false
		}
		c.Stacks = append(c.Stacks, f)
	}
	c.Winner, c.Factor, c.Explanation = winner(c)
	return c
}

// figureOf is a run's figure: its training time, or its busbw at size.
func figureOf(r *bench.Result, training bool, size int64) (float64, bool) {
	if training {
		if r.Training == nil {
			return 0, false
		}
		if t := r.Training.TrainerRuntimeSeconds; t != nil && *t > 0 {
			return *t, true
		}
		return r.Training.WallClockSeconds, r.Training.WallClockSeconds > 0
	}
	if size == 0 {
		return 0, false
	}
	return bench.Run{Result: r}.BusBW(size)
}

// commonLargestSize is the largest message size that every stack measured in one run at least:
// the stacks are compared where all of them have a figure (a type that stages through host
// memory sweeps to 4 GiB, one with GPUDirect RDMA to 16 GiB).
func commonLargestSize(stacks []Measured) int64 {
	var common map[int64]bool
	for _, s := range stacks {
		sizes := map[int64]bool{}
		for _, r := range s.Runs {
			if r.Result == nil {
				continue
			}
			for _, size := range bench.Sizes([]bench.Run{{Result: r.Result}}) {
				sizes[size] = true
			}
		}
		if len(sizes) == 0 {
			continue // a stack without a table is said failed, not compared
		}
		if common == nil {
			common = sizes
			continue
		}
		for size := range common {
			if !sizes[size] {
				delete(common, size)
			}
		}
	}
	var largest int64
	for size := range common {
		largest = max(largest, size)
	}
	return largest
}

// winner is the stack with the best median, how much it wins by over the next, and the
// sentence that says so; none when fewer than two stacks have a figure.
func winner(c Comparison) (string, float64, string) {
	var with []Figure
	for _, f := range c.Stacks {
		if len(f.Values) > 0 {
			with = append(with, f)
		}
	}
	if len(with) < 2 {
		return "", 0, fmt.Sprintf("no winner: %d of %d stacks gave a figure (%s)", len(with), len(c.Stacks), c.Figure)
	}
	sort.SliceStable(with, func(i, j int) bool {
		if c.HigherWins {
			return with[i].Median > with[j].Median
		}
		return with[i].Median < with[j].Median
	})
	best, next := with[0], with[1]
	if best.Median == next.Median || best.Median == 0 || next.Median == 0 {
		return "", 0, fmt.Sprintf("no winner: %s and %s tie at %.2f %s (%s)", best.Stack, next.Stack, best.Median, c.Unit, c.Figure)
	}
	factor := best.Median / next.Median
	if !c.HigherWins {
		factor = next.Median / best.Median
	}
	overlap := c.HigherWins && best.Min <= next.Max || !c.HigherWins && best.Max >= next.Min
	say := fmt.Sprintf("%s wins: %s %.2f %s against %s's %.2f (median of the repeats), ×%.2f", best.Stack, c.Figure, best.Median, c.Unit, next.Stack, next.Median, factor)
	if overlap {
		say += "; their repeats overlap, so the difference is within the spread: run more repeats (--repeat) before trusting it"
	}
	return best.Stack, factor, say
}
