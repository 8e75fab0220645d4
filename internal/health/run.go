package health

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// Options are one run's.
type Options struct {
	Kubectl verify.Kubectl
	Stack   topology.StackSpec // at the time of the run
	Pools   []string           // the pools to check; none: every pool
	Level   int                // dcgmi diag -r
	DryRun  bool
	// Timeout bounds each check from its job's creation (image pulls included); 0: the check's own.
	Timeout time.Duration
	Poll    time.Duration
	Now     func() time.Time
	Out     io.Writer // progress, one line per change
	// Run is the run's id (a label value); Dir, which must not exist, gets every job's log.
	Run string
	Dir string
}

// Statuses of a check and of a node.
const (
	Pass    = "pass"
	Fail    = "fail"
	Unknown = "unknown" // the check could not say (it never ran, timed out, was interrupted)
	NotRun  = "not run" // an earlier check failed, or the check does not apply
)

// Check is one check's outcome on a node.
type Check struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Evidence string `json:"evidence"`
}

// Result is one node's.
type Result struct {
	Node   string  `json:"node"`
	Pool   string  `json:"pool"`
	Status string  `json:"status"` // pass, fail, unknown, or skipped
	Why    string  `json:"why,omitempty"`
	Checks []Check `json:"checks,omitempty"`
	// Marked: what the run did to the node at its end.
	Marked string `json:"marked,omitempty"`
}

// Skipped is a node's status when the run left it alone.
const Skipped = "skipped"

// Outcome is the run's.
type Outcome struct {
	Results     []Result `json:"nodes"`
	Interrupted bool     `json:"interrupted,omitempty"`
	// Left are what the run could not delete or give back (each with what to run instead).
	Left []string `json:"left,omitempty"`
}

// mpiJobs is the MPI operator's MPIJobs as kubectl names them (plural.group).
var mpiJobs = "mpijobs." + strings.SplitN(benchjobs.MPIJobAPIVersion, "/", 2)[0]

// runner holds a run's state.
type runner struct {
	o       Options
	c       cluster
	start   time.Time
	results map[string]*Result
	targets []Target
	pairOK  bool // the MPI operator's MPIJob is served
}

// Run checks the chosen nodes and marks the failed ones; whatever becomes of ctx (Ctrl-C), it
// deletes every object it created and gives back every node it held but did not fail. The error
// is for what kept it from running at all.
func Run(ctx context.Context, o Options) (*Outcome, error) {
	r := &runner{o: o, c: cluster{k: o.Kubectl, now: o.Now}, start: o.Now(), results: map[string]*Result{}}
	nodes, pods, err := r.c.read(ctx)
	if err != nil {
		return nil, err
	}
	targets, skips := Choose(o.Stack, o.Pools, nodes, pods)
	out := &Outcome{}
	for _, s := range skips {
		out.Results = append(out.Results, Result{Node: s.Node, Pool: s.Pool, Status: Skipped, Why: s.Why})
	}
	_, err = r.c.kubectl(ctx, nil, "get", mpiJobs, "-n", benchjobs.Namespace, "-o", "name")
	r.pairOK = err == nil
	if o.DryRun {
		r.describe(targets)
		return r.collect(out, targets), nil
	}
	if len(targets) == 0 {
		return r.collect(out, nil), nil
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	bg := context.WithoutCancel(ctx)
	defer func() { out.Left = append(out.Left, r.cleanup(bg)...) }()
	r.targets = r.hold(ctx, targets, out)
	for _, t := range r.targets {
		r.results[t.Node] = &Result{Node: t.Node, Pool: t.Pool.Name}
	}
	r.nodeChecks(ctx, topology.HealthCheckDiag)
	r.nodeChecks(ctx, topology.HealthCheckNodeAllReduce)
	r.pairChecks(ctx)
	out.Interrupted = ctx.Err() != nil
	r.mark(bg, out)
	return r.collect(out, r.targets), nil
}

func (r *runner) printf(format string, a ...any) {
	d := r.o.Now().Sub(r.start).Round(time.Second)
	fmt.Fprintf(r.o.Out, "%2d:%02d  %s\n", int(d.Minutes()), int(d.Seconds())%60, fmt.Sprintf(format, a...))
}

// hold takes each target out of service for the run (the health taint, the run's annotation),
// then reads the pods again: a node a pod was bound to meanwhile is given back and skipped.
func (r *runner) hold(ctx context.Context, targets []Target, out *Outcome) []Target {
	var held []Target
	for _, t := range targets {
		if err := r.c.hold(ctx, t.Node, r.o.Run); err != nil {
			out.Results = append(out.Results, Result{Node: t.Node, Pool: t.Pool.Name, Status: Skipped, Why: fmt.Sprintf("could not take it out of service: %v", err)})
			continue
		}
		held = append(held, t)
	}
	pods, err := r.c.pods(ctx)
	if err != nil {
		return held
	}
	var kept []Target
	for _, t := range held {
		busy := ""
		for _, p := range pods {
			if p.Spec.NodeName == t.Node && p.holdsGPUs() {
				busy = p.Metadata.Namespace + "/" + p.Metadata.Name
			}
		}
		if busy != "" {
			r.c.release(context.WithoutCancel(ctx), t.Node, false)
			out.Results = append(out.Results, Result{Node: t.Node, Pool: t.Pool.Name, Status: Skipped, Why: "busy: pod " + busy + " was placed there as the run began"})
			continue
		}
		r.printf("%s (pool %s): held for the run (%s=%s)", t.Node, t.Pool.Name, topology.HealthTaint.Key, topology.HealthTaint.Value)
		kept = append(kept, t)
	}
	return kept
}

// jobName is a check's job name on a node: short and stable, whatever the node's name.
func jobName(check, run string, nodes ...string) string {
	h := sha256.Sum256([]byte(strings.Join(nodes, "+")))
	return fmt.Sprintf("gpucluster-%s-%s-%s", check, run, hex.EncodeToString(h[:])[:8])
}

// passing are the targets whose every check so far passed.
func (r *runner) passing() []Target {
	var out []Target
	for _, t := range r.targets {
		res := r.results[t.Node]
		if !slices.ContainsFunc(res.Checks, func(c Check) bool { return c.Status != Pass }) {
			out = append(out, t)
		}
	}
	return out
}

// record adds a check's outcome to a node and says it.
func (r *runner) record(node string, c Check) {
	res := r.results[node]
	res.Checks = append(res.Checks, c)
	r.printf("%s: %s %s: %s", node, c.Name, c.Status, c.Evidence)
}

// nodeChecks runs one check on every target still passing, at once, and judges each.
func (r *runner) nodeChecks(ctx context.Context, check string) {
	targets := r.passing()
	if ctx.Err() != nil || len(targets) == 0 {
		return
	}
	jobs := map[string]Target{}
	for _, t := range targets {
		h := benchjobs.HealthJob{Stack: r.o.Stack, Pool: t.Pool, Node: t.Node, Name: jobName(check, r.o.Run, t.Node), Run: r.o.Run,
			Check: check, Deadline: r.deadline(check, t.Pool), Level: r.o.Level}
		obj, err := h.Object()
		if err == nil {
			err = r.create(ctx, obj)
		}
		if err != nil {
			r.record(t.Node, Check{Name: check, Status: Unknown, Evidence: fmt.Sprintf("could not create its job: %v", err)})
			continue
		}
		jobs[h.Name] = t
	}
	r.printf("%s: started on %d node(s)", check, len(jobs))
	ended := r.wait(ctx, "jobs", check, len(jobs), r.maxDeadline(check, targets))
	for name, t := range jobs {
		log, state := r.jobLog(context.WithoutCancel(ctx), name, ended[name])
		r.keepLog(name, log)
		r.record(t.Node, judgeNode(check, t.Pool, r.o.Level, state, log))
	}
}

// deadline is how long a check's job may take, its start included.
func (r *runner) deadline(check string, p topology.PoolSpec) int {
	if r.o.Timeout > 0 {
		return int(r.o.Timeout / time.Second)
	}
	return topology.HealthCheckDeadlineSeconds(check, r.o.Level, p)
}

func (r *runner) maxDeadline(check string, targets []Target) time.Duration {
	d := 0
	for _, t := range targets {
		d = max(d, r.deadline(check, t.Pool))
	}
	return time.Duration(d)*time.Second + time.Minute // the job's own deadline ends it first
}

func (r *runner) keepLog(name, log string) {
	if log != "" {
		os.WriteFile(filepath.Join(r.o.Dir, name+".log"), []byte(log), 0o644)
	}
}

// mark acts on every held node by its verdict: a failed node keeps the taint and gets the
// failure label and a Warning event; a passed node is given back (an earlier run's failure
// label cleared, with a Normal event); a node the run could not judge is given back as it was.
func (r *runner) mark(ctx context.Context, out *Outcome) {
	for _, t := range r.targets {
		res := r.results[t.Node]
		res.Status = verdict(res.Checks)
		var err error
		switch res.Status {
		case Fail:
			first, summary := failures(res.Checks)
			if err = r.c.fail(ctx, t.Node, first); err == nil {
				err = r.c.event(ctx, t.Node, "Warning", healthgate.ReasonFailed, "gpucluster health: "+summary)
				res.Marked = fmt.Sprintf("labelled %s=%s, keeps %s", topology.LabelHealthFailed, first, topology.HealthTaint.Key)
			}
		case Pass:
			if err = r.c.release(ctx, t.Node, true); err == nil {
				res.Marked = "given back to service"
				if t.Again {
					err = r.c.event(ctx, t.Node, "Normal", healthgate.ReasonPassed, "gpucluster health: every check passed: "+passedNames(res.Checks))
					res.Marked = "given back to service (an earlier failure cleared)"
				}
			}
		default:
			// A node the run cannot judge is given back as it was: an earlier run's failure
			// stands, with its taint, until a check says otherwise.
			if t.Again && t.FailedBefore {
				err = r.c.forget(ctx, t.Node)
			} else {
				err = r.c.release(ctx, t.Node, false)
			}
			res.Marked = "given back as it was"
		}
		if err != nil {
			out.Left = append(out.Left, fmt.Sprintf("node %s: %v (kubectl taint node %s %s- and kubectl annotate node %s %s- give it back)",
				t.Node, err, t.Node, topology.HealthTaint.Key, t.Node, topology.LabelHealthRun))
		}
	}
}

// cleanup deletes every object of the run, waiting until they are gone.
func (r *runner) cleanup(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	kinds := "jobs.batch"
	if r.pairOK {
		kinds += "," + mpiJobs
	}
	sel := topology.LabelHealthRun + "=" + r.o.Run
	if _, err := r.c.kubectl(ctx, nil, "delete", kinds, "-n", benchjobs.Namespace, "-l", sel, "--ignore-not-found", "--wait=true", "--timeout=150s", "--cascade=foreground"); err != nil {
		return []string{fmt.Sprintf("the run's jobs: %v (kubectl -n %s delete %s -l %s)", err, benchjobs.Namespace, kinds, sel)}
	}
	return nil
}

func (r *runner) collect(out *Outcome, targets []Target) *Outcome {
	for _, t := range targets {
		if res, ok := r.results[t.Node]; ok {
			out.Results = append(out.Results, *res)
		} else {
			out.Results = append(out.Results, Result{Node: t.Node, Pool: t.Pool.Name, Status: "would check"})
		}
	}
	slices.SortFunc(out.Results, func(a, b Result) int { return strings.Compare(a.Pool+"/"+a.Node, b.Pool+"/"+b.Node) })
	return out
}

// verdict is a node's from its checks: the first failure fails it; a check that could not say
// leaves it unknown; else it passed.
func verdict(checks []Check) string {
	status := Pass
	for _, c := range checks {
		switch c.Status {
		case Fail:
			return Fail
		case Unknown:
			status = Unknown
		}
	}
	if len(checks) == 0 {
		return Unknown
	}
	return status
}

func failures(checks []Check) (string, string) {
	first := ""
	var parts []string
	for _, c := range checks {
		if c.Status == Fail {
			if first == "" {
				first = c.Name
			}
			parts = append(parts, c.Name+": "+c.Evidence)
		}
	}
	return first, strings.Join(parts, "; ")
}

func passedNames(checks []Check) string {
	var names []string
	for _, c := range checks {
		if c.Status == Pass {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, ", ")
}
