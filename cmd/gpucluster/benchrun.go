package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/bench"
	"github.com/gpucluster/gpucluster/internal/benchrun"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// runContext is what ends a run early: Ctrl-C or SIGTERM (test/clilive sends the built CLI a
// real SIGINT).
func runContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// defaultPoll is how often bench run and health look at their jobs unless --poll says.
const defaultPoll = 5 * time.Second

// cmdBenchRun runs one pool's benchmark job on the live cluster and reports on it.
func cmdBenchRun(args []string, stdout, stderr io.Writer) int {
	usage := "bench run --stack NAME [--pool NAME] [--job nccl|train] [--kubeconfig FILE] [--context NAME] [--timeout DURATION] [--results DIR] [--ignore-verify] [--poll DURATION]"
	c := newCLI("bench run", usage, stdout, stderr)
	stack := c.fs.String("stack", "", "the stack the cluster was deployed from (stacks/Pulumi.<stack>.yaml): its jobs run, and its plan is what the run is judged against")
	poolName := c.fs.String("pool", "", "the pool whose job runs (default: the stack's only pool with benchmarks)")
	jobKind := c.fs.String("job", benchrun.JobNCCL, "which job: nccl (the all-reduce) or train (the TrainJob; needs gpucluster:benchmarks.trainingCommand)")
	kubeconfig := c.fs.String("kubeconfig", "", "the cluster's kubeconfig (default: what kubectl reads, KUBECONFIG then ~/.kube/config)")
	kubeContext := c.fs.String("context", "", "the kubeconfig's context (default: its current context)")
	timeout := c.fs.Duration("timeout", 0, "how long the job may take from its creation, waiting in the queue included (default: the job's own deadline and 10 minutes)")
	results := c.fs.String("results", "", "where run directories go: <results>/<stack>/<UTC time> (default: the project's results/)")
	ignoreVerify := c.fs.Bool("ignore-verify", false, "run even when gpucluster verify finds an error on the pool (the result says so)")
	poll := c.fs.Duration("poll", defaultPoll, "how often the job's state is read: sooner sees its end sooner, later asks less of the API server")
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--stack " + a }); !ok {
		return code
	}
	if !slices.Contains(benchrun.Jobs, *jobKind) {
		return c.fail("--job %s: the jobs are %s", *jobKind, strings.Join(benchrun.Jobs, ", "))
	}
	if *timeout < 0 {
		return c.fail("--timeout %s: give how long the job may take (2h)", *timeout)
	}
	if *poll <= 0 {
		return c.fail("--poll %s: give how often to read the job's state (5s)", *poll)
	}
	if *stack == "" {
		return c.fail("give --stack NAME: the stack the cluster was deployed from")
	}
	spec, file, code, ok := c.liveStack(*stack)
	if !ok {
		return code
	}
	started := now()
	pool, msg := benchPool(spec, *poolName)
	if msg != "" {
		return c.fail("%s", msg)
	}
	kubectl := verify.Kubectl{Kubeconfig: *kubeconfig, Context: *kubeContext}

	// verify first: a run on a cluster that is not as planned measures something else.
	readCtx, cancel := context.WithTimeout(context.Background(), readTimeout)
	cluster, err := kubectl.Read(readCtx, spec)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster bench run: reading the cluster: %v\nnothing was applied\n", err)
		return exitUnreadable
	}
	findings := poolErrors(verify.Check(spec, cluster), pool.Name)
	if len(findings) > 0 {
		if *ignoreVerify {
			fmt.Fprintf(stderr, "gpucluster bench run: verify finds %d error(s) on pool %s; running anyway (--ignore-verify):\n", len(findings), pool.Name)
		} else {
			fmt.Fprintf(stderr, "gpucluster bench run: verify finds %d error(s) on pool %s, so the run would not measure the planned topology; nothing was applied:\n", len(findings), pool.Name)
		}
		for _, f := range findings {
			fmt.Fprintln(stderr, "  "+findingLine(f))
		}
		if !*ignoreVerify {
			fmt.Fprintln(stderr, "mend them (gpucluster verify --stack "+spec.Stack+" --wait 10m waits for a cluster still coming up), or run anyway with --ignore-verify")
			return exitFail
		}
	}

	base := resultsBase(*results, file)
	dir := filepath.Join(base, spec.Stack, started.UTC().Format("20060102T150405Z"))
	ctx, stop := runContext()
	defer stop()
	fmt.Fprintf(stdout, "bench run: stack %s, pool %s (%d × %s), job %s; results in %s\n", spec.Stack, pool.Name, pool.Benchmark.Nodes, pool.Instance.Name, *jobKind, shown(dir))
	out, err := benchrun.Run(ctx, benchrun.Options{Kubectl: kubectl, Stack: spec, Pool: pool, Job: *jobKind, Dir: dir,
		Timeout: runTimeout(*timeout, pool, *jobKind), Poll: *poll, Now: now, Out: stdout})
	if out == nil {
		fmt.Fprintf(stderr, "gpucluster bench run: %v\n", err)
		if errors.Is(err, benchrun.ErrExists) {
			return exitFail
		}
		return exitUnreadable
	}
	code = reportRun(dir, spec, pool, *jobKind, started, out, findings, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster bench run: %v\n", err)
		return exitFail
	}
	return code
}

// benchPool is the pool to run: the one named, or the stack's only pool with benchmarks.
func benchPool(spec topology.StackSpec, name string) (topology.PoolSpec, string) {
	var with []string
	for _, p := range spec.Pools {
		if p.Benchmark != nil {
			with = append(with, p.Name)
		}
		if p.Name == name {
			if p.Benchmark == nil {
				return p, fmt.Sprintf("--pool %s has no benchmark jobs: set gpucluster:benchmarks: {enabled: true} in stack %s", name, spec.Stack)
			}
			return p, ""
		}
	}
	switch {
	case name != "":
		var all []string
		for _, p := range spec.Pools {
			all = append(all, p.Name)
		}
		return topology.PoolSpec{}, fmt.Sprintf("--pool %s: stack %s has no such pool%s; its pools: %s", name, spec.Stack, topology.Suggest(name, all), strings.Join(all, ", "))
	case len(with) == 0:
		return topology.PoolSpec{}, fmt.Sprintf("stack %s runs no benchmark: set gpucluster:benchmarks: {enabled: true} in it", spec.Stack)
	case len(with) > 1:
		return topology.PoolSpec{}, fmt.Sprintf("stack %s has %d pools with benchmarks: name one with --pool (%s)", spec.Stack, len(with), strings.Join(with, ", "))
	}
	return benchPool(spec, with[0])
}

// poolErrors are verify's errors about the pool or the whole cluster (a missing CRD).
func poolErrors(r verify.Report, pool string) []verify.Finding {
	var out []verify.Finding
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError && (f.Pool == "" || f.Pool == pool) {
			out = append(out, f)
		}
	}
	return out
}

// runTimeout is --timeout, or the job's own deadline and ten minutes for the queue and cleanup.
func runTimeout(flag time.Duration, pool topology.PoolSpec, job string) time.Duration {
	if flag > 0 {
		return flag
	}
	deadline := pool.Benchmark.NCCL.DeadlineSeconds
	if job == benchrun.JobTrain && pool.Benchmark.Train != nil {
		deadline = pool.Benchmark.Train.DeadlineSeconds
	}
	return time.Duration(deadline)*time.Second + 10*time.Minute
}

// reportRun writes the run's report into its directory: bench report's result (JSON, and its
// table in RESULT.md) on the run's output log, doctor on every pod's log, and for an nccl-tests
// run the chart of busbw against message size. Its exit code is the run's: a run that did not
// finish, or failed, fails.
func reportRun(dir string, spec topology.StackSpec, pool topology.PoolSpec, job string, started time.Time, out *benchrun.Outcome,
	findings []verify.Finding, stdout, stderr io.Writer) int {
	var md strings.Builder
	fmt.Fprintf(&md, "# Benchmark run: %s, pool %s, %s\n\n", spec.Stack, pool.Name, job)
	fmt.Fprintf(&md, "- started %s, %s after %s\n", started.UTC().Format(time.RFC3339), out.Ended, out.Elapsed.Round(time.Second))
	fmt.Fprintf(&md, "- job `%s`: %s\n", out.Job, orWord(out.Finished, "did not finish"))
	fmt.Fprintf(&md, "- planned: %d × %s, %s\n", pool.Benchmark.Nodes, pool.Instance.Name, pool.Placement.Reason)
	if len(findings) > 0 {
		fmt.Fprintf(&md, "- **run with %d verify error(s) on the pool** (`--ignore-verify`): the result may not measure the planned topology\n", len(findings))
		for _, f := range findings {
			fmt.Fprintf(&md, "  - %s\n", findingLine(f))
		}
	}
	code := exitFail
	if out.OutputLog != "" {
		args := []string{"--log", filepath.Join(dir, out.OutputLog), "--stack", spec.Stack, "--pool", pool.Name}
		for _, f := range []string{out.Pods, out.Nodes} {
			if f != "" {
				args = append(args, "--pods", filepath.Join(dir, f))
			}
		}
		if job == benchrun.JobTrain && pool.Benchmark.Train.EFACounters {
			// No launcher gathers them: each training pod's log holds its own node's readings.
			args = append(args, "--efa-counters", filepath.Join(dir, benchrun.LogsDir))
		}
		var table, js, errs bytes.Buffer
		code = cmdBenchReport(args, &table, &errs)
		cmdBenchReport(append(args, "-o", "json"), &js, io.Discard)
		if js.Len() > 0 {
			os.WriteFile(filepath.Join(dir, benchrun.ResultJSON), js.Bytes(), 0o644)
		}
		fmt.Fprintf(&md, "\n## Result\n\n`gpucluster bench report %s`\n\n```\n%s%s```\n", strings.Join(relativeTo(dir, args), " "), table.String(), errs.String())
		if runs, err := bench.LoadRuns(benchrun.ResultJSON, js.Bytes()); err == nil && len(bench.Sizes(runs)) > 0 {
			if err := writeChart(filepath.Join(dir, benchrun.ResultSVG), compareSVG(runs)); err == nil {
				fmt.Fprintf(&md, "\n![busbw against message size](%s)\n", benchrun.ResultSVG)
			}
		}
	} else {
		fmt.Fprintf(&md, "\n## Result\n\nNo output log: the job's %s never ran.\n", map[string]string{benchrun.JobNCCL: "launcher", benchrun.JobTrain: "rank 0"}[job])
	}
	if len(out.Logs) > 0 {
		var doc, errs bytes.Buffer
		cmdDoctor([]string{"--log", filepath.Join(dir, benchrun.LogsDir), "--stack", spec.Stack, "--pool", pool.Name}, &doc, &errs)
		os.WriteFile(filepath.Join(dir, benchrun.DoctorFile), append(doc.Bytes(), errs.Bytes()...), 0o644)
		fmt.Fprintf(&md, "\n## Doctor, on every pod's log\n\n```\n%s%s```\n", doc.String(), errs.String())
	}
	fmt.Fprintf(&md, "\n## Files\n\n")
	for _, f := range append([]string{benchrun.JobFile, out.Pods, out.Nodes, benchrun.ResultJSON, benchrun.ResultSVG, benchrun.DoctorFile}, out.Logs...) {
		if _, err := os.Stat(filepath.Join(dir, f)); f != "" && err == nil {
			fmt.Fprintf(&md, "- `%s`\n", f)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, benchrun.ResultMarkdown), []byte(md.String()), 0o644); err != nil {
		fmt.Fprintf(stderr, "gpucluster bench run: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "%s\n", shown(filepath.Join(dir, benchrun.ResultMarkdown)))
	if out.Ended != "finished" || out.Finished != finishedOK(job) {
		fmt.Fprintf(stderr, "gpucluster bench run: the job %s: %s\n", out.Ended, orWord(out.Finished, "no result"))
		return exitFail
	}
	return code
}

func finishedOK(job string) string {
	if job == benchrun.JobTrain {
		return "Complete"
	}
	return "Succeeded"
}

func orWord(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// relativeTo shows paths under dir relative to it, as RESULT.md's reader finds them.
func relativeTo(dir string, args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if r, err := filepath.Rel(dir, a); err == nil && !strings.HasPrefix(r, "..") {
			a = r
		}
		out[i] = a
	}
	return out
}
