package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/bench"
	"github.com/gpucluster/gpucluster/internal/doctor"
)

// benchSubcommands are what `gpucluster bench` runs.
var benchSubcommands = []string{"run", "report", "compare"}

func cmdBench(args []string, stdout, stderr io.Writer) int {
	usage := "usage: gpucluster bench run --stack NAME [--pool NAME] [--job nccl|train] [--kubeconfig FILE] [--context NAME] [--timeout DURATION] [--results DIR] [--ignore-verify]\n" +
		"       gpucluster bench report --log FILE|DIR [--log …] [--stack NAME [--pool NAME] | --profile NAME] [--test BINARY] [--nodes N] [--pods FILE …] [--efa-counters FILE|DIR …] [-o table|json|yaml]\n" +
		"       gpucluster bench compare RESULT.json|RUN-DIR ... [--svg FILE]\n"
	return runSubcommand("bench", usage, benchSubcommands,
		map[string]command{"run": cmdBenchRun, "report": cmdBenchReport, "compare": cmdCompare}, args, stdout, stderr)
}

func cmdBenchReport(args []string, stdout, stderr io.Writer) int {
	c := newCLI("bench report", "bench report --log FILE|DIR [--log …] [--stack NAME [--pool NAME] | --profile NAME] [--test BINARY] [--nodes N] [--pods FILE …] [--efa-counters FILE|DIR …] [-o table|json|yaml]", stdout, stderr).withOutput()
	j := c.withJob("the launcher's log (nccl-tests text output) or nccl-tests' -J JSON file ('-' reads stdin); repeat it, or name a directory, to add the workers' logs", "judge against")
	test := c.fs.String("test", "", "the nccl-tests binary that wrote the log (all_reduce_perf, sendrecv_perf, …), when its tables do not name it")
	nodes := c.fs.Int("nodes", 0, "how many nodes the run spanned, when the log does not say")
	var counterLogs logFlag
	c.fs.Var(&counterLogs, "efa-counters", "the logs that hold the job's EFA counter readings, a file or a directory (repeat it), when --log does not hold them all: a training job's are in every pod's log (default: the --log files)")
	var spanFiles logFlag
	c.fs.Var(&spanFiles, "pods", "the job's pods and the nodes they ran on, as kubectl get pods|nodes -o json writes them (repeat it): how many EC2 network nodes the run spanned")
	if code, ok := c.parseJob(args, j); !ok {
		return code
	}
	if *nodes < 0 {
		return c.fail("--nodes %d: give the number of nodes the run spanned (1 or more)", *nodes)
	}
	if slices.Contains(counterLogs, "-") {
		return c.fail("--efa-counters -: name the files or directory that hold the readings (stdin is for --log)")
	}
	// What the job is compared with is part of the command line: checked before any log is read.
	pool, against, code, ok := c.expectation(*j.stack, *j.pool, *j.profile)
	if !ok {
		return code
	}
	job, err := readLogs(j.logs)
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster bench report: %v\n", err)
		return exitUnreadable
	}
	counters := job
	if len(counterLogs) > 0 {
		if counters, err = readLogs(counterLogs); err != nil {
			fmt.Fprintf(stderr, "gpucluster bench report: --efa-counters: %v\n", err)
			return exitUnreadable
		}
	}
	var span *bench.Span
	if len(spanFiles) > 0 {
		if span, err = readSpan(spanFiles); err != nil {
			fmt.Fprintf(stderr, "gpucluster bench report: --pods: %v\n", err)
			return exitUnreadable
		}
	}
	logFile := strings.Join(job.Files, ", ")
	// The logs are streamed once per reader, never held whole: memory stays flat in their size.
	var perf *bench.Perf
	var training *bench.Training
	isJSON, err := job.startsWithJSON()
	switch {
	case err != nil:
	case isJSON:
		err = job.read(func(r io.Reader) (err error) { perf, err = bench.ParsePerfJSON(r); return err })
	default:
		err = job.read(func(r io.Reader) (err error) { perf, err = bench.ParsePerf(r); return err })
		if errors.Is(err, bench.ErrNoTable) {
			// Not nccl-tests: a training job's log, if it has a clock to read.
			if terr := job.read(func(r io.Reader) (err error) { training, err = bench.ParseTraining(r); return err }); terr != nil {
				err = fmt.Errorf("%v; nor a training log: %v", err, terr)
			} else {
				err = nil
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster bench report: %s: %v\n", logFile, err)
		return exitUnreadable
	}
	// The same log's NCCL INFO lines say which transports carried the traffic.
	var diag *doctor.Report
	var l *doctor.Log
	err = job.read(func(r io.Reader) (err error) { l, err = doctor.Parse(r); return err })
	var notNCCL doctor.ErrNotNCCL
	switch {
	case err == nil:
		diag = doctor.Diagnose(l, nil, pool, against)
	case !errors.As(err, &notNCCL):
		fmt.Fprintf(stderr, "gpucluster bench report: %s: %v\n", logFile, err)
		return exitUnreadable
	}
	var results []*bench.Result
	if training != nil {
		results = append(results, bench.NewTrainingResult(logFile, training, pool, against, diag))
	} else {
		for _, t := range perf.Tables {
			if t.Collective == "" && t.Binary == "" {
				t.Binary = testOf(*test, pool)
			}
			t.GivenNodes = *nodes
			results = append(results, bench.NewResult(logFile, t, pool, against, diag))
		}
	}
	// The EFA devices' own counters, when the job recorded them, say what crossed EFA.
	var efa *bench.EFAReadings
	if err := counters.read(func(r io.Reader) (err error) { efa, err = bench.ParseEFACounters(r); return err }); err != nil {
		fmt.Fprintf(stderr, "gpucluster bench report: %s: %v\n", strings.Join(counters.Files, ", "), err)
		return exitUnreadable
	}
	for _, r := range results {
		r.Span = span
		r.AddEFA(efa)
	}
	code = c.emit(results, func(w io.Writer) {
		for i, r := range results {
			if i > 0 {
				fmt.Fprintln(w)
			}
			if r.Training != nil {
				writeTraining(w, r, diag != nil)
			} else {
				writeBench(w, r, diag != nil)
			}
		}
	})
	if code != exitOK {
		return code
	}
	return benchExit(results, pool != nil)
}

// benchExit: a failed run fails; a verdict asked for (--stack/--profile) that the log cannot give
// is exitNoVerdict.
func benchExit(results []*bench.Result, asked bool) int {
	code := exitOK
	for _, r := range results {
		switch {
		case r.Verdict.Status == bench.Fail:
			return exitFail
		case r.Verdict.Status == bench.Unknown && asked:
			code = exitNoVerdict
		}
	}
	return code
}

// writeTraining prints a training run: its wall clock, the trainer's own figures, the verdict.
func writeTraining(w io.Writer, r *bench.Result, sawNCCL bool) {
	t := r.Training
	fmt.Fprintf(w, "training run in %s", r.Log)
	if r.Against != "" {
		fmt.Fprintf(w, " (against %s)", r.Against)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "instance %s, nodes %s, placement %s\n", orDash(r.InstanceType), count(r.Nodes), orDash(r.Placement))
	if r.Assumed != "" {
		fmt.Fprintln(w, r.Assumed)
	}
	writeSpan(w, r)
	writeTransports(w, r, sawNCCL)
	if t.TimestampSource != "" {
		fmt.Fprintf(w, "wall clock %s (%.0f s), lines %d to %d, %s timestamps\n", time.Duration(t.WallClockSeconds*float64(time.Second)).Round(time.Second),
			t.WallClockSeconds, t.FirstLine, t.LastLine, t.TimestampSource)
	} else {
		fmt.Fprintln(w, "wall clock unknown: no timestamped lines (collect the log with kubectl logs --timestamps)")
	}
	if t.TrainerRuntimeSeconds != nil {
		fmt.Fprintf(w, "trainer runtime %.1f s (line %d)", *t.TrainerRuntimeSeconds, t.RuntimeLine)
		if t.SamplesPerSecond != nil {
			fmt.Fprintf(w, ", %g samples/s", *t.SamplesPerSecond)
		}
		if t.StepsPerSecond != nil {
			fmt.Fprintf(w, ", %g steps/s", *t.StepsPerSecond)
		}
		fmt.Fprintln(w)
	}
	writeEFA(w, r.EFA)
	writeVerdict(w, r)
}

func writeTransports(w io.Writer, r *bench.Result, sawNCCL bool) {
	if sawNCCL {
		fmt.Fprintf(w, "NCCL %s, net plugin %s, provider %s; traffic: intra-node %s, inter-node %s\n",
			orDash(r.NCCLVersion), orDash(strings.TrimSpace(r.NetPlugin+" "+r.PluginVersion)), orDash(r.Provider), orDash(r.IntraNode), orDash(r.InterNode))
	} else {
		fmt.Fprintln(w, "no NCCL INFO lines: transports unknown (run with NCCL_DEBUG=INFO to see them)")
	}
}

func writeVerdict(w io.Writer, r *bench.Result) {
	fmt.Fprintf(w, "verdict: %s\n", r.Verdict.Status)
	for _, reason := range r.Verdict.Reasons {
		fmt.Fprintf(w, "  - %s\n", reason)
	}
}

func writeBench(w io.Writer, r *bench.Result, sawNCCL bool) {
	what := r.Collective
	switch {
	case what == "" && r.Binary != "":
		what = r.Binary + " (named by the command line)"
	case what == "":
		what = "(test not named in the log)"
	}
	if r.TestsVersion != "" {
		what += " " + r.TestsVersion
	}
	fmt.Fprintf(w, "nccl-tests %s, line %d of %s", what, r.Line, r.Log)
	if r.Against != "" {
		fmt.Fprintf(w, " (against %s)", r.Against)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "instance %s, nodes %s, placement %s", orDash(r.InstanceType), count(r.Nodes), orDash(r.Placement))
	if r.Ranks > 0 {
		fmt.Fprintf(w, ", %d ranks", r.Ranks)
	}
	if len(r.Devices) > 0 {
		fmt.Fprintf(w, " on %s", strings.Join(r.Devices, ", "))
	}
	fmt.Fprintln(w)
	if r.Assumed != "" {
		fmt.Fprintln(w, r.Assumed)
	}
	writeSpan(w, r)
	writeTransports(w, r, sawNCCL)
	fmt.Fprintf(w, "%12s  %10s  %10s  %10s  %10s  %s\n", "size", "time(us)", "busbw", "in-place", "busbw", "#wrong")
	for _, row := range r.Rows {
		fmt.Fprintf(w, "%12s  %s  %s  %s\n", topology.HumanSize(row.Bytes), measureCols(row.OutOfPlace), measureCols(row.InPlace), wrongCol(row))
	}
	if r.Elided {
		fmt.Fprintln(w, "(rows were elided from this log: an excerpt)")
	}
	for _, sk := range r.Skipped {
		fmt.Fprintf(w, "skipped line %d, not a row: %s: %s\n", sk.Line, sk.Reason, sk.Text)
	}
	if r.Peak != nil {
		fmt.Fprintf(w, "peak busbw %.2f GB/s at %s", r.Peak.BusBW, topology.HumanSize(r.Peak.Bytes))
		for _, s := range r.AtSizes {
			fmt.Fprintf(w, "; %.2f GB/s at %s", s.BusBW, topology.HumanSize(s.Bytes))
		}
		fmt.Fprintln(w)
	}
	if r.AvgBusBW != nil {
		fmt.Fprintf(w, "avg bus bandwidth %g GB/s (depends on the sizes swept: reported, not compared)\n", *r.AvgBusBW)
	}
	writeEFA(w, r.EFA)
	writeVerdict(w, r)
	for _, ref := range r.Verdict.References {
		fmt.Fprintf(w, "  reference: %.2f GB/s at %s on %d x %s — %s\n", ref.BusBW, topology.HumanSize(ref.Bytes), ref.Nodes, ref.InstanceType, ref.Source)
	}
}

// writeEFA shows what each node's EFA devices counted during the run.
func writeEFA(w io.Writer, t *bench.EFATraffic) {
	if t == nil || len(t.Nodes) == 0 {
		return
	}
	fmt.Fprintf(w, "EFA devices' own counters, during the run:\n%-44s %7s %14s %14s %10s %8s %9s %12s\n",
		"node", "devices", "sent", "received", "retrans", "timeouts", "impaired", "unresponsive")
	row := func(name, devices string, tx, rx uint64, ev bench.EFAEvents) {
		fmt.Fprintf(w, "%-44s %7s %14d %14d %10s %8s %9s %12s\n", name, devices, tx, rx,
			counted(ev.RetransPkts), counted(ev.RetransTimeouts), counted(ev.ImpairedRemoteConns), counted(ev.UnresponsiveRemotes))
	}
	devices := 0
	for _, n := range t.Nodes {
		row(n.Node, strconv.Itoa(n.Devices), n.TxBytes, n.RxBytes, n.Events)
		devices += n.Devices
	}
	row("all", strconv.Itoa(devices), t.TxBytes, t.RxBytes, t.Events)
	if t.NeededBytes > 0 {
		fmt.Fprintf(w, "the all-reduce had to send at least %d bytes between nodes: %s\n", t.NeededBytes, t.NeededHow)
	}
}

// counted writes a counter's change, or "-" where the driver does not keep it.
func counted(n *uint64) string {
	if n == nil {
		return "-"
	}
	return strconv.FormatUint(*n, 10)
}

func measureCols(m *bench.Measure) string {
	if m == nil {
		return fmt.Sprintf("%10s  %10s", "-", "-")
	}
	return fmt.Sprintf("%10.2f  %10.2f", m.TimeUs, m.BusBW)
}

func wrongCol(r bench.Row) string {
	var parts []string
	for _, m := range []*bench.Measure{r.OutOfPlace, r.InPlace} {
		switch {
		case m == nil:
		case m.MaxError != nil:
			parts = append(parts, fmt.Sprintf("err %g", *m.MaxError)) // before nccl-tests 2.13: the largest deviation
		case m.Wrong == nil:
			parts = append(parts, "N/A")
		case m.WrongAsPrinted != "":
			parts = append(parts, m.WrongAsPrinted) // as nccl-tests wrote it: 1.04858e+06
		default:
			parts = append(parts, fmt.Sprint(*m.Wrong))
		}
	}
	return strings.Join(parts, "/")
}

// testOf is the test a table that does not name its own ran: the one --test names, else the
// stack's own benchmark job's (gpucluster's MPIJob runs topology.NCCLTestsBinary), else unknown.
func testOf(flag string, pool *topology.PoolSpec) string {
	switch {
	case flag != "":
		return flag
	case pool != nil && pool.Benchmark != nil:
		return path.Base(topology.NCCLTestsBinary)
	}
	return ""
}

// writeSpan says where the run's pods ran in the network, when their pods and nodes were given.
func writeSpan(w io.Writer, r *bench.Result) {
	if r.Span != nil {
		fmt.Fprintf(w, "network: %s\n", r.Span)
	}
}

// readSpan reads --pods files (kubectl's JSON), each opened before any is read.
func readSpan(files []string) (*bench.Span, error) {
	inputs := map[string]io.Reader{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		defer fh.Close()
		inputs[f] = fh
	}
	return bench.ReadSpan(inputs)
}
