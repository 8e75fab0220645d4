package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/topology/catalog"
	"github.com/gpucluster/gpucluster/internal/bench"
	"github.com/gpucluster/gpucluster/internal/benchrun"
	"github.com/gpucluster/gpucluster/internal/experiment"
)

// Files in an experiment's directory, results/experiments/<UTC time>/.
const (
	experimentMD   = "COMPARISON.md"
	experimentJSON = "comparison.json"
)

// destroyTimeout bounds each stack's destroy: pulumi-eks's cluster and a Karpenter pool's
// instances take minutes; longer than this, AWS is refusing and the user must finish by hand.
const destroyTimeout = 90 * time.Minute

// cmdExperimentRun brings the stacks up side by side, runs the same job on each, compares them,
// and destroys every stack it brought up: on success, on a failed step and on Ctrl-C.
func cmdExperimentRun(args []string, stdout, stderr io.Writer) int {
	c := newCLI("experiment run", "experiment run --stacks A,B[,…] [--job nccl|train] [--repeat N] [--max-duration DURATION] [--quota 'NAME=VCPUS' …] [--keep] [--results DIR]", stdout, stderr)
	f := c.withExperiment()
	jobKind := c.fs.String("job", benchrun.JobNCCL, "the job each stack runs: nccl (the all-reduce) or train (the TrainJob)")
	repeat := c.fs.Int("repeat", 1, "how many times each stack runs the job: the comparison gives the spread")
	keep := c.fs.Bool("keep", false, "leave the stacks up at the end (their expiry still stops their GPU pools)")
	noHealth := c.fs.Bool("no-health", false, "skip gpucluster health on each stack's nodes before its runs")
	verifyWait := c.fs.Duration("verify-wait", 20*time.Minute, "how long each cluster may take, once up, to be as planned")
	results := c.fs.String("results", "", "where the experiment's directory goes: <results>/experiments/<UTC time> (default: the project's results/)")
	poll := c.fs.Duration("poll", defaultPoll, "how often bench run and health read their jobs' state")
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--stacks " + a }); !ok {
		return code
	}
	if !slices.Contains(benchrun.Jobs, *jobKind) {
		return c.fail("--job %s: the jobs are %s", *jobKind, strings.Join(benchrun.Jobs, ", "))
	}
	if *repeat < 1 {
		return c.fail("--repeat %d: give how many runs each stack makes (1 or more)", *repeat)
	}
	if *verifyWait <= 0 || *poll <= 0 {
		return c.fail("--verify-wait and --poll take a duration: 20m, 5s")
	}
	x, code, ok := c.planExperiment(f)
	if !ok {
		return code
	}
	for _, r := range x.plan.Refusals {
		fmt.Fprintf(stderr, "refused: %s\n", r)
	}
	if len(x.plan.Refusals) > 0 {
		fmt.Fprintln(stderr, "gpucluster experiment run: nothing was created")
		return exitFail
	}
	for _, s := range x.stacks {
		if _, msg := benchPool(s.Spec, ""); msg != "" {
			return c.fail("stack %s: %s", s.Name, msg)
		}
	}
	dir := filepath.Join(resultsBase(*results, x.files[0]), "experiments", now().UTC().Format("20060102T150405Z"))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		fmt.Fprintf(stderr, "gpucluster experiment run: %v; nothing was created\n", err)
		return exitUnreadable
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		fmt.Fprintf(stderr, "gpucluster experiment run: %v (each experiment writes a new directory); nothing was created\n", err)
		return exitFail
	}
	// The expiry goes into each stack file first: the stacks' GPU pools stop by then even if
	// this command dies.
	for i, s := range x.plan.Stacks {
		if s.ExpiresBy.Equal(s.Expiry) {
			continue
		}
		if err := setExpiry(x.files[i], s.ExpiresBy); err != nil {
			fmt.Fprintf(stderr, "gpucluster experiment run: %s: %v; nothing was created\n", relative(x.files[i]), err)
			return exitFail
		}
		fmt.Fprintf(stdout, "%s: %s %s\n", relative(x.files[i]), topology.KeyExpiresAt, s.ExpiresBy.Format(time.RFC3339))
	}
	r := &experimentRun{x: x, dir: dir, job: *jobKind, repeat: *repeat, health: !*noHealth, verifyWait: *verifyWait, poll: *poll,
		keep: *keep, destroyed: map[string]bool{}, stdout: &syncWriter{w: stdout}, stderr: stderr}
	return r.run(*keep)
}

// experimentFlags are what experiment plan and run share.
type experimentFlags struct {
	stacks, maxDuration, out *string
	account                  quotaFlag
}

func (c *cli) withExperiment() *experimentFlags {
	f := &experimentFlags{account: quotaFlag{}}
	f.stacks = c.fs.String("stacks", "", "the stacks to compare, two or more, comma-separated: stacks/Pulumi.<stack>.yaml")
	f.maxDuration = c.fs.String("max-duration", defaultMaxDuration, "the longest the experiment may run: every stack expires by then ("+lifetimeUnits+")")
	c.fs.Var(f.account, "quota", "an EC2 vCPU quota the account allows, as Service Quotas names it: 'Running On-Demand G and VT instances=384' (repeat it)")
	f.out = c.fs.String("out", "", "where the stacks' review bundles go, one directory per stack (default the project's review/)")
	return f
}

// experimentRun is one experiment under way.
type experimentRun struct {
	x           plannedExperiment
	dir         string
	job         string
	repeat      int
	health      bool
	verifyWait  time.Duration
	poll        time.Duration
	stdout      *syncWriter
	stderr      io.Writer
	keep        bool
	mu          sync.Mutex
	deployments []*experiment.Deployment
	destroyed   map[string]bool // by stack: its destroy left nothing
	measured    []experiment.Measured
	interrupted atomic.Bool
}

func (r *experimentRun) say(stack, format string, a ...any) {
	r.stdout.printf("%s %s: %s\n", now().UTC().Format("15:04:05"), stack, fmt.Sprintf(format, a...))
}

// run brings every stack up, measures it, compares, and destroys what it brought up.
func (r *experimentRun) run(keep bool) int {
	ctx := r.interrupts()
	r.measured = make([]experiment.Measured, len(r.x.stacks))
	var wg sync.WaitGroup
	for i, s := range r.x.stacks {
		pool, _ := benchPool(s.Spec, "")
		r.measured[i] = experiment.Measured{Stack: s.Name, InstanceType: pool.Instance.Name, Nodes: pool.Benchmark.Nodes,
			USDPerInstanceHour: catalog.OnDemand(pool.Instance.Name).USDPerHour}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.stack(ctx, i)
		}()
	}
	wg.Wait()

	code := r.compare()
	for _, d := range r.deployments {
		switch {
		case keep:
			r.say(d.Name, "kept (--keep): destroy it with pulumi destroy -s %s; its GPU pools stop at its expiry anyway", d.Name)
		case !r.destroyed[d.Name]:
			code = exitFail
		}
	}
	if r.interrupted.Load() {
		fmt.Fprintln(r.stderr, "gpucluster experiment run: interrupted; the comparison holds what was measured before")
		return exitFail
	}
	return code
}

// interrupts is the experiment's context, cancelled by the first Ctrl-C or SIGTERM; nothing
// stops the destroys after it.
//
// The engine stops an update on SIGINT by itself, gracefully: it waits for the operations in
// flight and records them, so that the destroy finds everything. A Ctrl-C at a terminal reaches
// the whole process group, the Pulumi CLI among it, so the update is never cancelled through
// its context: the Automation API would send a second SIGINT (which makes the CLI stop at once)
// and kill it ten seconds on, leaving an EKS cluster half-made and out of the state. A SIGTERM
// reaches this process alone: it is passed to the group as the SIGINT a terminal would send.
func (r *experimentRun) interrupts() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for sig := range sigs {
			if r.interrupted.Swap(true) {
				r.stdout.printf("destroying what was brought up: another Ctrl-C does not stop it (it would leave the stacks running); wait\n")
				continue
			}
			r.stdout.printf("interrupted: every stack stops its step and is destroyed\n")
			if sig == syscall.SIGTERM {
				syscall.Kill(0, syscall.SIGINT)
			}
			cancel()
		}
	}()
	return ctx
}

// stack brings stack i up and measures it; a failure is recorded with its step.
func (r *experimentRun) stack(ctx context.Context, i int) {
	s, file := r.x.stacks[i], r.x.files[i]
	m := &r.measured[i]
	dir := filepath.Join(r.dir, s.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		m.Failed = "setup: " + err.Error()
		return
	}
	d, err := experiment.Open(ctx, r.x.project, r.x.projectName, s.Name, file, now)
	if err != nil {
		m.Failed = "up: " + err.Error()
		r.say(s.Name, "not brought up: %v", err)
		return
	}
	r.mu.Lock()
	r.deployments = append(r.deployments, d)
	r.mu.Unlock()
	// Destroyed as soon as it is done with, measured or failed: GPU instances bill by the second.
	defer func() {
		if !r.keep {
			ok := r.destroy(d)
			r.mu.Lock()
			r.destroyed[d.Name] = ok
			r.mu.Unlock()
		}
	}()
	started := now()
	r.say(s.Name, "up: started (engine log %s)", shown(filepath.Join(dir, "up.log")))
	upLog := filepath.Join(dir, "up.log")
	// Never cancelled: the engine stops on the SIGINT it gets itself (interrupts).
	if err := withLog(upLog, func(w io.Writer) error { return d.Up(context.Background(), w) }); err != nil {
		if ctx.Err() != nil {
			m.Failed = "up: interrupted (the engine stopped its update)"
			r.say(s.Name, "%s after %s", m.Failed, now().Sub(started).Round(time.Second))
			return
		}
		m.Failed = "up: " + engineError(upLog, err)
		r.say(s.Name, "up failed after %s: %s (engine log %s)", now().Sub(started).Round(time.Second), engineError(upLog, err), shown(upLog))
		return
	}
	r.say(s.Name, "up in %s", now().Sub(started).Round(time.Second))
	if ctx.Err() != nil {
		m.Failed = "interrupted"
		return
	}
	kubeconfig, err := d.Kubeconfig(ctx)
	if err != nil {
		m.Failed = "kubeconfig: " + err.Error()
		return
	}
	kc := filepath.Join(dir, "kubeconfig.json")
	if err := os.WriteFile(kc, kubeconfig, 0o600); err != nil {
		m.Failed = "kubeconfig: " + err.Error()
		return
	}
	steps := [][]string{{"verify", "--stack", s.Name, "--kubeconfig", kc, "--wait", r.verifyWait.String()}}
	if r.health {
		steps = append(steps, []string{"health", "--stack", s.Name, "--kubeconfig", kc, "--poll", r.poll.String()})
	}
	for _, step := range steps {
		if code, err := r.gpucluster(ctx, filepath.Join(dir, step[0]+".txt"), step...); code != exitOK {
			m.Failed = fmt.Sprintf("%s: exit %d%s (%s)", step[0], code, errText(err), shown(filepath.Join(dir, step[0]+".txt")))
			r.say(s.Name, "%s", m.Failed)
			return
		}
		r.say(s.Name, "%s: ok", step[0])
	}
	for n := 1; n <= r.repeat; n++ {
		before, _ := filepath.Glob(filepath.Join(dir, s.Name, "*"))
		runStart := now()
		log := filepath.Join(dir, fmt.Sprintf("bench-run-%d.txt", n))
		code, err := r.gpucluster(ctx, log, "bench", "run", "--stack", s.Name, "--kubeconfig", kc, "--job", r.job, "--results", dir, "--poll", r.poll.String())
		run := experiment.Run{Seconds: now().Sub(runStart).Seconds()}
		if after, _ := filepath.Glob(filepath.Join(dir, s.Name, "*")); len(after) > len(before) {
			run.Dir = shown(newest(after, before))
			run.Result = readResult(filepath.Join(newest(after, before), benchrun.ResultJSON))
		}
		m.Runs = append(m.Runs, run)
		if code != exitOK && code != exitNoVerdict && run.Result == nil {
			m.Failed = fmt.Sprintf("bench run %d of %d: exit %d%s (%s)", n, r.repeat, code, errText(err), shown(log))
			r.say(s.Name, "%s", m.Failed)
			return
		}
		status := "no result"
		if run.Result != nil {
			status = run.Result.Verdict.Status
		}
		r.say(s.Name, "bench run %d of %d: %s in %s", n, r.repeat, status, time.Duration(run.Seconds*float64(time.Second)).Round(time.Second))
		if ctx.Err() != nil {
			m.Failed = "interrupted"
			return
		}
	}
}

// gpucluster runs this CLI's own binary for one step of a stack, its output in log: each step is
// the command a user would run, with its own signals (a Ctrl-C reaches it as it reaches this
// process) and its clock started where this one is.
func (r *experimentRun) gpucluster(ctx context.Context, log string, args ...string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return exitFail, err
	}
	out, err := os.Create(log)
	if err != nil {
		return exitFail, err
	}
	defer out.Close()
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), envAt+"="+now().UTC().Format(time.RFC3339Nano))
	if err := cmd.Start(); err != nil {
		return exitFail, err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			cmd.Process.Signal(os.Interrupt) // it cleans up what it created, then ends
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return exitFail, err
	}
	return exitOK, nil
}

// compare writes the comparison of what was measured: COMPARISON.md (also on stdout), its JSON,
// and for the all-reduce the busbw chart. Exit 0 when it is whole, 1 when a stack or run is
// missing or failed.
func (r *experimentRun) compare() int {
	cmp := experiment.Compare(r.measured)
	var runs []bench.Run
	for _, m := range r.measured {
		for i, run := range m.Runs {
			if run.Result != nil {
				runs = append(runs, bench.Run{Label: fmt.Sprintf("%s#%d", m.Stack, i+1), Result: run.Result})
			}
		}
	}
	md := experimentMarkdown(cmp, r.measured, runs)
	js, _ := json.MarshalIndent(struct {
		experiment.Comparison
		Measured []experiment.Measured `json:"measured"`
	}{cmp, r.measured}, "", "  ")
	files := map[string][]byte{experimentMD: []byte(md), experimentJSON: append(js, '\n')}
	if len(bench.Sizes(runs)) > 0 {
		files[benchrun.ResultSVG] = []byte(compareSVG(runs)) // the chart a run writes, of every run
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), data, 0o644); err != nil {
			fmt.Fprintf(r.stderr, "gpucluster experiment run: %v\n", err)
		}
	}
	r.stdout.printf("\n%s\n", md)
	if cmp.Whole {
		return exitOK
	}
	return exitFail
}

// experimentMarkdown is the comparison for a person: the answer first, then each stack, then
// every run side by side as bench compare shows them.
func experimentMarkdown(c experiment.Comparison, measured []experiment.Measured, runs []bench.Run) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Experiment: %s\n\n%s.\n\n", c.Figure, c.Explanation)
	if !c.Whole {
		w("The comparison is not whole: a stack or a run failed, or gave no figure (below).\n\n")
	}
	w("| stack | instance | nodes | %s, median | min – max | runs | verdicts | EFA bytes | cost of the result | failed |\n|---|---|---:|---:|---|---:|---|---:|---:|---|\n", c.Figure)
	for i, f := range c.Stacks {
		m := measured[i]
		median, spread, efa, cost := "–", "–", "–", "–"
		if len(f.Values) > 0 {
			median, spread = fmt.Sprintf("%.2f %s", f.Median, c.Unit), fmt.Sprintf("%.2f – %.2f", f.Min, f.Max)
			cost = fmt.Sprintf("$%.2f", f.CostUSD)
		}
		if f.EFABytes > 0 {
			efa = topology.HumanSize(int64(f.EFABytes))
		}
		w("| %s | %s | %d | %s | %s | %d | %s | %s | %s | %s |\n", f.Stack, orDash(m.InstanceType), m.Nodes, median, spread, len(f.Values),
			orDash(strings.Join(f.Verdicts, ", ")), efa, cost, orDash(f.Failed))
	}
	w("\nThe cost of the result is the median run's instance-hours (its nodes × its wall time) at the plan's on-demand price.\n")
	if len(runs) >= 2 {
		w("\n## Every run\n\n%s", compareMarkdown(runs))
	}
	return b.String()
}

// destroy destroys a stack the experiment opened, with a context of its own (the experiment's
// may be cancelled), says how to finish if AWS refused, and says whether nothing is left.
func (r *experimentRun) destroy(d *experiment.Deployment) bool {
	ctx, cancel := context.WithTimeout(context.Background(), destroyTimeout)
	defer cancel()
	started := now()
	r.say(d.Name, "destroy: started")
	log := filepath.Join(r.dir, d.Name, "destroy.log")
	err := withLog(log, func(w io.Writer) error { return d.Destroy(ctx, w) })
	left, lerr := d.Remaining(ctx)
	switch {
	case err == nil && lerr == nil && left == 0:
		r.say(d.Name, "destroyed in %s", now().Sub(started).Round(time.Second))
		return true
	case err == nil && lerr == nil:
		r.say(d.Name, "destroy left %d resource(s): finish with pulumi destroy -s %s (in %s)", left, d.Name, r.x.project)
	case err != nil:
		r.say(d.Name, "destroy failed: %s. Finish with pulumi destroy -s %s (in %s); its GPU pools stop at their expiry anyway", engineError(log, err), d.Name, r.x.project)
	default:
		r.say(d.Name, "destroyed, but its state could not be read to check: %v; check with pulumi stack -s %s", lerr, d.Name)
	}
	return false
}

// plannedExperiment is an experiment that passed its plan's checks' parsing.
type plannedExperiment struct {
	names, files         []string
	stacks               []experiment.Stack
	plan                 experiment.Plan
	maxDuration          string
	project, projectName string
}

// withLog runs do with a new log file, which is closed after.
func withLog(path string, do func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return do(f)
}

// newest is the entry of after that before did not have.
func newest(after, before []string) string {
	for i := len(after) - 1; i >= 0; i-- {
		if !slices.Contains(before, after[i]) {
			return after[i]
		}
	}
	return after[len(after)-1]
}

// readResult is a bench run's result.json, nil if it wrote none.
func readResult(path string) *bench.Result {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	runs, err := bench.LoadRuns(path, data)
	if err != nil || len(runs) == 0 {
		return nil
	}
	return runs[0].Result
}

// engineError is what the engine's log says went wrong (its "error:" diagnostics, the first
// three), else the error's last line.
func engineError(log string, err error) string {
	data, _ := os.ReadFile(log)
	var said []string
	for _, line := range strings.Split(string(data), "\n") {
		if _, msg, ok := strings.Cut(line, "error: "); ok && !slices.Contains(said, strings.TrimSpace(msg)) && len(said) < 3 {
			said = append(said, strings.TrimSpace(msg))
		}
	}
	if len(said) > 0 {
		return strings.Join(said, "; ")
	}
	return lastLine(err.Error())
}

// lastLine is the last non-empty line of a (multi-line) error text: the engine's own summary.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
}

// syncWriter serialises the stacks' progress lines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) printf(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, format, a...)
}
