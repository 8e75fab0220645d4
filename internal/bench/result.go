package bench

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/topology/catalog"
	"github.com/gpucluster/gpucluster/internal/doctor"
)

// Result is one benchmark run, with what is needed to reproduce and compare it.
type Result struct {
	Log          string `json:"log"`
	Against      string `json:"against,omitempty"` // "stack x, pool y" or "profile p"
	Pool         string `json:"pool,omitempty"`
	InstanceType string `json:"instanceType,omitempty"`
	Nodes        int    `json:"nodes,omitempty"` // 0 when neither the table nor NCCL says
	Placement    string `json:"placement,omitempty"`
	Table

	NCCLVersion   string `json:"ncclVersion,omitempty"`
	NetPlugin     string `json:"netPlugin,omitempty"`
	PluginVersion string `json:"netPluginVersion,omitempty"`
	Provider      string `json:"provider,omitempty"`
	// IntraNode and InterNode are the transports that carried the traffic, per the doctor.
	IntraNode string `json:"intraNode,omitempty"`
	InterNode string `json:"interNode,omitempty"`

	Peak    *SizeBW  `json:"peak,omitempty"`
	AtSizes []SizeBW `json:"atSizes"`
	// Training is set for a training log instead of an nccl-tests table.
	Training *Training `json:"training,omitempty"`
	// Span is where the run's pods ran in the network, when their pods and nodes were given.
	Span *Span `json:"span,omitempty"`
	// EFA is what the EFA devices' own counters say the run carried, when its log records them.
	EFA     *EFATraffic `json:"efa,omitempty"`
	Verdict Verdict     `json:"verdict"`
}

// SizeBW is the out-of-place bus bandwidth at one message size.
type SizeBW struct {
	Bytes int64   `json:"bytes"`
	BusBW float64 `json:"busbwGBps"`
}

// Verdict statuses.
const (
	Pass    = "pass"
	Fail    = "fail"
	Unknown = "unknown"
)

// Verdict says whether the run is right (no wrong results) and as fast as published figures.
type Verdict struct {
	Status     string                   `json:"status"`
	Reasons    []string                 `json:"reasons"`
	References []catalog.BusBWReference `json:"references,omitempty"`
}

// reportSizes are the sizes whose busbw every report shows, when the sweep reached them.
var reportSizes = []int64{1 << 30, 16 << 30}

// NewResult judges the table against the pool (nil: no expectation) and what the doctor read
// from the same log (nil: the log has no NCCL INFO lines).
func NewResult(logName string, t Table, pool *topology.PoolSpec, against string, d *doctor.Report) *Result {
	r := &Result{Log: logName, Against: against, Table: t, AtSizes: []SizeBW{}}
	r.describe(pool, d, t.HostsListed())
	for _, row := range t.Rows {
		if row.OutOfPlace == nil {
			continue
		}
		if r.Peak == nil || row.OutOfPlace.BusBW > r.Peak.BusBW {
			r.Peak = &SizeBW{row.Bytes, row.OutOfPlace.BusBW}
		}
		for _, s := range reportSizes {
			if row.Bytes == s {
				r.AtSizes = append(r.AtSizes, SizeBW{s, row.OutOfPlace.BusBW})
			}
		}
	}
	r.Verdict = r.judge()
	return r
}

// NewTrainingResult describes a training run. Its verdict is whether the run finished: nobody
// publishes a wall clock to hold a training job to; compare runs with bench compare.
func NewTrainingResult(logName string, tr *Training, pool *topology.PoolSpec, against string, d *doctor.Report) *Result {
	r := &Result{Log: logName, Against: against, Training: tr, AtSizes: []SizeBW{}}
	r.describe(pool, d, 0)
	v := Verdict{Status: Unknown, Reasons: []string{}}
	switch {
	case tr.FailedLine > 0:
		v.Status = Fail
		v.Reasons = append(v.Reasons, fmt.Sprintf("line %d: a rank failed: %s", tr.FailedLine, tr.Failure))
	case tr.Finished:
		v.Status = Pass
		v.Reasons = append(v.Reasons, "the run finished")
	default:
		v.Reasons = append(v.Reasons, "the log ends before the run finished (no trainer metrics line, no \"worker group successfully finished\"): cut short, or still running")
	}
	r.Verdict = v
	return r
}

// describe fills what the run ran on: the pool's facts, then the doctor's reading of the log.
// hosts is how many hostnames the log named (0: unknown).
func (r *Result) describe(pool *topology.PoolSpec, d *doctor.Report, hosts int) {
	if pool != nil {
		r.Pool, r.InstanceType, r.Placement = pool.Name, pool.Instance.Name, string(pool.Placement.Strategy)
	}
	r.Nodes = hosts
	if d != nil {
		r.NCCLVersion, r.NetPlugin, r.PluginVersion, r.Provider = d.NCCLVersion, d.NetPlugin, d.PluginVersion, d.Provider
		if r.InstanceType == "" {
			r.InstanceType = d.InstanceType
		}
		if len(d.Communicators) > 0 {
			c := d.Communicators[0]
			r.IntraNode, r.InterNode = c.IntraNode, c.InterNode
			if r.Nodes == 0 {
				r.Nodes = c.Nodes
			}
		}
	}
	// Hostnames and NCCL's node count are per pod: with several pods per node (one per GPU)
	// the pods of one node count once per node.
	if pool != nil && pool.TrainingPod.PodsPerNode > 1 && r.Nodes > 0 {
		ppn := pool.TrainingPod.PodsPerNode
		r.Nodes = (r.Nodes + ppn - 1) / ppn
	}
	if r.Nodes == 0 {
		r.Nodes = r.GivenNodes
	}
}

func (r *Result) judge() Verdict {
	v := Verdict{Status: Pass, Reasons: []string{}}
	fail := func(format string, a ...any) {
		v.Status = Fail
		v.Reasons = append(v.Reasons, fmt.Sprintf(format, a...))
	}
	unknown := func(format string, a ...any) {
		if v.Status == Pass {
			v.Status = Unknown
		}
		v.Reasons = append(v.Reasons, fmt.Sprintf(format, a...))
	}
	r.judgeRows(fail, func(format string, a ...any) { v.Reasons = append(v.Reasons, fmt.Sprintf(format, a...)) })
	if r.OutOfBounds != nil && *r.OutOfBounds > 0 {
		fail("nccl-tests counted %d out-of-bounds values", *r.OutOfBounds)
	}
	if r.OutOfBounds == nil && r.AvgBusBW == nil && !r.Elided {
		unknown("no \"Out of bounds values\" or \"Avg bus bandwidth\" footer: the run ended early or the log was cut")
	}
	if len(r.Rows) == 0 {
		unknown("the table has no rows")
		return v
	}
	// Each test against its own figure, or not at all: only all_reduce_perf has published ones.
	op := r.Collective
	if op == "" {
		op = r.Binary
	}
	switch {
	case op == "":
		unknown("the log does not name the test (no \"Collective test starting\" line, no *_perf command line): published figures are for all_reduce_perf, and a table of another test must not be judged by them")
		return v
	case op != "all_reduce_perf":
		unknown("published figures are for all_reduce_perf; this is %s", op)
		return v
	}
	switch {
	case r.InstanceType == "":
		unknown("instance type unknown: pass --stack/--pool or --profile (the log names no platform)")
		return v
	case r.Nodes == 0 && r.ListingCut():
		unknown("node count unknown: the rank listing is cut (%d of %d rank lines), so its hosts are not the job's, and NCCL's nNodes is not in the log; pass --nodes N", r.rankLines, r.Ranks)
		return v
	case r.Nodes == 0:
		unknown("node count unknown: the log has neither nccl-tests' \"Rank … on HOST\" lines nor NCCL's nNodes; pass --nodes N")
		return v
	}
	v.References = catalog.BusBWReferences(r.InstanceType, r.Nodes)
	if len(v.References) == 0 {
		unknown("no published all_reduce_perf figure for %d x %s; bandwidth not judged: compare runs of your own instead (gpucluster bench compare A.json B.json)", r.Nodes, r.InstanceType)
		return v
	}
	judged := false
	for _, ref := range v.References {
		row := r.rowAt(ref.Bytes)
		if row == nil || row.OutOfPlace == nil {
			v.Reasons = append(v.Reasons, fmt.Sprintf("no %s row: the published %.2f GB/s there is not judged", topology.HumanSize(ref.Bytes), ref.BusBW))
			continue
		}
		judged = true
		got, floor := row.OutOfPlace.BusBW, ref.BusBW*catalog.BusBWTolerance
		if got < floor {
			fail("busbw %.2f GB/s at %s is %.0f%% of the published %.2f GB/s (below the %.0f%% nccl-tests accepts)",
				got, topology.HumanSize(ref.Bytes), 100*got/ref.BusBW, ref.BusBW, 100*catalog.BusBWTolerance)
		} else {
			v.Reasons = append(v.Reasons, fmt.Sprintf("busbw %.2f GB/s at %s is %.0f%% of the published %.2f GB/s",
				got, topology.HumanSize(ref.Bytes), 100*got/ref.BusBW, ref.BusBW))
		}
	}
	if !judged {
		sizes := make([]string, len(v.References))
		for i, ref := range v.References {
			sizes[i] = topology.HumanSize(ref.Bytes)
		}
		unknown("the sweep has none of the sizes with a published figure (%s); run with -e up to %s",
			strings.Join(sizes, ", "), sizes[len(sizes)-1])
	}
	if r.Collective == "" && judged {
		v.Reasons = append(v.Reasons, "the table does not name its test; the launcher's command line runs all_reduce_perf")
	}
	return v
}

func (r *Result) rowAt(bytes int64) *Row {
	for i := range r.Rows {
		if r.Rows[i].Bytes == bytes {
			return &r.Rows[i]
		}
	}
	return nil
}
