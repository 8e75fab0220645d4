package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/doctor"
	"github.com/gpucluster/gpucluster/internal/efareading"
)

// stdin is where `-` reads from (a variable so tests can feed it).
var stdin io.Reader = os.Stdin

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	c := newCLI("doctor", "doctor --log FILE|DIR [--log FILE…] [--topo FILE] [--stack NAME [--pool NAME] | --profile NAME] [-o table|json|yaml]", stdout, stderr).withOutput()
	j := c.withJob("NCCL_DEBUG=INFO log of the job ('-' reads stdin); repeat it, or name a directory, for every pod's log", "compare with")
	topoFile := c.fs.String("topo", "", "output of `nvidia-smi topo -m` on a node ('-' reads stdin)")
	if code, ok := c.parseJob(args, j); !ok {
		return code
	}
	if slices.Contains(j.logs, "-") && *topoFile == "-" {
		return c.fail("--log - and --topo - both read stdin: give one of them as a file")
	}
	// What the job is compared with is part of the command line: checked before any log is read.
	pool, against, code, ok := c.expectation(*j.stack, *j.pool, *j.profile)
	if !ok {
		return code
	}
	job, err := readLogs(j.logs)
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster doctor: %v\n", err)
		return exitUnreadable
	}
	l, err := doctor.Parse(job.Reader())
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster doctor: %s: %v\n", strings.Join(job.Files, ", "), err)
		return exitUnreadable
	}
	var topo *doctor.Topo
	if *topoFile != "" {
		if topo, err = readInput(*topoFile, doctor.ParseTopo); err != nil {
			fmt.Fprintf(stderr, "gpucluster doctor: %s: %v\n", *topoFile, err)
			return exitUnreadable
		}
	}
	r := doctor.Diagnose(l, topo, pool, against)
	if len(job.Files) > 1 {
		r.Sources = job.Files
		for i := range r.Findings {
			r.Findings[i].Sources = job.sourcesOf(r.Findings[i].Evidence)
		}
	}
	if code := c.emit(r, func(w io.Writer) { writeDoctor(w, r) }); code != exitOK {
		return code
	}
	return doctorExit(r)
}

// doctorExit: a mismatch or an error finding fails (CI gates on it as on plan); a verdict asked
// for that the log cannot give is exitNoVerdict.
func doctorExit(r *doctor.Report) int {
	switch r.Outcome() {
	case doctor.OutcomeFail:
		return exitFail
	case doctor.OutcomeUnknown:
		return exitNoVerdict
	}
	return exitOK
}

func readInput[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	if path == "-" {
		return parse(stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return parse(f)
}

// jobFlags are what doctor and bench report share on their command line: the job's logs, and
// one thing to compare the job with.
type jobFlags struct {
	logs                 logFlag
	stack, pool, profile *string
}

// withJob registers the job's flags: logHelp says what --log reads, compare how a stack's pool
// or a profile is used ("compare with", "judge against").
func (c *cli) withJob(logHelp, compare string) *jobFlags {
	j := &jobFlags{}
	c.fs.Var(&j.logs, "log", logHelp)
	j.stack = c.fs.String("stack", "", compare+" a pool of this stack (stacks/Pulumi.<stack>.yaml)")
	j.pool = c.fs.String("pool", "", "with --stack: the pool the job ran on (default the stack's first)")
	j.profile = c.fs.String("profile", "", compare+" this built-in profile")
	return j
}

// parseJob parses a job command's line (flags only: a bare argument was meant for --log) and
// checks the job's flags.
func (c *cli) parseJob(args []string, j *jobFlags) (int, bool) {
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--log " + a }); !ok {
		return code, false
	}
	switch {
	case len(j.logs) == 0:
		return c.fail("give the job's log with --log FILE (or a directory of every pod's log, or - for stdin)"), false
	case *j.stack != "" && *j.profile != "":
		return c.fail("--stack and --profile both name what the job is compared with: give one"), false
	case *j.pool != "" && *j.stack == "":
		return c.fail("--pool names a pool of a stack: give --stack too"), false
	}
	return 0, true
}

// expectation is the pool spec the job should match: a built-in profile, or a stack's pool
// ("" and nil for neither). A profile, stack or pool that does not exist is a usage error; a
// stack file that is invalid fails.
func (c *cli) expectation(stack, poolName, profile string) (*topology.PoolSpec, string, int, bool) {
	switch {
	case profile != "":
		spec, code, ok := c.profile(profile)
		return spec, "profile " + profile, code, ok
	case stack != "":
		file, code, ok := c.stackFile(stack, false)
		if !ok {
			return nil, "", code, false
		}
		spec, err := topology.LoadStack(file, now())
		if err != nil {
			var ces topology.ConfigErrors
			if errors.As(err, &ces) {
				fmt.Fprintf(c.stderr, "gpucluster %s: %s is invalid: %v\n", c.name, relative(file), ces)
				return nil, "", exitFail, false
			}
			fmt.Fprintf(c.stderr, "gpucluster %s: %v\n", c.name, err)
			return nil, "", exitUnreadable, false
		}
		var names []string
		for i, p := range spec.Pools {
			if poolName == "" || p.Name == poolName {
				return &spec.Pools[i], fmt.Sprintf("stack %s, pool %s", stack, p.Name), 0, true
			}
			names = append(names, p.Name)
		}
		return nil, "", c.fail("stack %s has no pool %q%s; pools: %s", stack, poolName, topology.Suggest(poolName, names), strings.Join(names, ", ")), false
	}
	return nil, "", 0, true
}

func writeDoctor(w io.Writer, r *doctor.Report) {
	if len(r.Sources) > 1 {
		fmt.Fprintf(w, "one job, %d logs: %s\n", len(r.Sources), strings.Join(r.Sources, ", "))
	}
	fmt.Fprintf(w, "NCCL %s, net plugin %s, network %s", orDash(r.NCCLVersion), strings.TrimSpace(r.NetPlugin+" "+r.PluginVersion), orDash(r.Network))
	if r.NetworkFrom != "" {
		fmt.Fprintf(w, " (from %s)", r.NetworkFrom)
	}
	if r.CollNetPlugin != "" {
		fmt.Fprintf(w, ", collective plugin %s", r.CollNetPlugin)
	}
	fmt.Fprintln(w)
	if r.Platform != "" || r.Provider != "" {
		fmt.Fprintf(w, "aws-ofi-nccl: platform %s, provider %s, %s NIC(s)", orDash(r.Platform), orDash(r.Provider), count(r.NICs))
		if len(r.PluginSetEnv) > 0 {
			fmt.Fprintf(w, "; set itself: %s", strings.Join(topology.SortedKeys(r.PluginSetEnv), ", "))
		}
		fmt.Fprintln(w)
	}
	for _, c := range r.Communicators {
		if c.Excerpt {
			fmt.Fprintf(w, "\nconnections without their communicator's Init lines (an excerpt): ranks, nodes and ranks per node are unknown\n")
		} else {
			fmt.Fprintf(w, "\ncommunicator %s: %s ranks on %s node(s), %s per node, %s channels", c.ID, count(c.Ranks), count(c.Nodes), count(c.LocalRanks), count(c.Channels))
			if c.Parent != "" {
				fmt.Fprintf(w, ", split from %s", c.Parent)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  intra-node: %s\n  inter-node: %s\n", c.IntraNode, c.InterNode)
		if c.NVLSChannels > 0 || c.NVLSHeads > 0 || c.NVLSInUse {
			// Its buffers set up is use (from NCCL 2.22, at the first NVLS collective); a channel
			// count alone is support.
			state := "supported"
			if c.NVLSInUse {
				state = "in use"
			}
			fmt.Fprintf(w, "  NVLS (NVLink SHARP) %s: %s channels, %s heads\n", state, count(c.NVLSChannels), count(c.NVLSHeads))
		}
		if c.CollNet > 0 {
			fmt.Fprintf(w, "  CollNet: %d connection(s) via %s\n", c.CollNet, c.CollNetVia)
		}
		for _, conn := range c.Connections {
			fmt.Fprintf(w, "    %-10s %-32s %-22s %d\n", conn.Where, conn.Transport, conn.Class, conn.Count)
		}
	}
	if r.Topology != nil {
		fmt.Fprintf(w, "\ntopology: %s\n", r.Topology.Summary())
	}
	if e := r.EFA; e != nil {
		fmt.Fprintf(w, "\nEFA counters: %d node(s) sent %s and received %s over EFA during the run\n",
			len(e.Nodes), efareading.BytesText(e.TxBytes), efareading.BytesText(e.RxBytes))
		for _, p := range e.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(w, "%s %s\n  seen:  %s\n", strings.ToUpper(f.Severity), f.Code, f.Evidence)
		if len(f.Sources) > 0 {
			fmt.Fprintf(w, "  in:    %s\n", strings.Join(f.Sources, ", "))
		}
		fmt.Fprintf(w, "  cause: %s\n  fix:   %s\n", f.Cause, f.Fix)
	}
	if len(r.NCCLWarnings) > 0 {
		fmt.Fprintf(w, "\nNCCL warnings:\n")
		for _, warn := range r.NCCLWarnings {
			fmt.Fprintf(w, "  %s\n", warn)
		}
	}
	for _, c := range r.CutLines {
		fmt.Fprintf(w, "\nnot read: line %d is over 1 MiB; its last %d bytes were not read\n", c.Line, c.BytesCut)
	}
	if n := len(r.UnreadLines); n > 0 {
		fmt.Fprintf(w, "\nnot read: %d binary line(s): %s\n", n, lineList(r.UnreadLines))
	}
	if v := r.Verdict; v != nil {
		fmt.Fprintf(w, "\nverdict against %s: %s\n  expected %d rank(s) per node, intra-node %s, inter-node %s\n  observed %s rank(s) per node, intra-node %s, inter-node %s\n",
			v.Against, strings.ToUpper(v.Status), v.ExpectedRanksPerNode, v.ExpectedIntra, v.ExpectedInter, count(v.ObservedRanksPerNode), v.ObservedIntra, v.ObservedInter)
		if v.Reason != "" {
			fmt.Fprintf(w, "  reason: %s\n", v.Reason)
		}
		for _, c := range v.Changes {
			fmt.Fprintf(w, "  change: %s\n", c)
		}
	}
}

// lineList names line numbers, the first twenty and a count of the rest.
func lineList(lines []int) string {
	var parts []string
	for i, n := range lines {
		if i == 20 {
			parts = append(parts, fmt.Sprintf("and %d more", len(lines)-20))
			break
		}
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(parts, ", ")
}

// count prints a number the log may not give (0: unknown).
func count(n int) string {
	if n == 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
