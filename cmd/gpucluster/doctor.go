package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/doctor"
)

// stdin is where `-` reads from (a variable so tests can feed it).
var stdin io.Reader = os.Stdin

func cmdDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("doctor", stderr)
	var logs logFlag
	fs.Var(&logs, "log", "NCCL_DEBUG=INFO log of the job ('-' reads stdin); repeat it, or name a directory, for every pod's log")
	topoFile := fs.String("topo", "", "output of `nvidia-smi topo -m` on a node ('-' reads stdin)")
	stack := fs.String("stack", "", "compare with a pool of this stack (stacks/Pulumi.<stack>.yaml)")
	poolName := fs.String("pool", "", "with --stack: the pool the job ran on (default the stack's first)")
	profile := fs.String("profile", "", "compare with this built-in profile")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) > 0 || len(logs) == 0 || (*stack != "" && *profile != "") || (slices.Contains(logs, "-") && *topoFile == "-") ||
		(*poolName != "" && *stack == "") {
		fmt.Fprintln(stderr, "usage: gpucluster doctor --log FILE|DIR [--log FILE…] [--topo FILE] [--stack NAME [--pool NAME] | --profile NAME] [--json]")
		return exitUsage
	}
	job, err := readLogs(logs)
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
	pool, against, err := expectation(*stack, *poolName, *profile)
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster doctor: %v\n", err)
		return expectationExit(err)
	}
	r := doctor.Diagnose(l, topo, pool, against)
	if len(job.Files) > 1 {
		r.Sources = job.Files
		for i := range r.Findings {
			r.Findings[i].Sources = job.sourcesOf(r.Findings[i].Evidence)
		}
	}
	if *asJSON {
		if code := writeJSON(stdout, stderr, r); code != 0 {
			return code
		}
	} else {
		writeDoctor(stdout, r)
	}
	return doctorExit(r)
}

// doctorExit: a mismatch or an error finding fails (CI gates on it as on plan); a verdict asked
// for that the log cannot give is exitNoVerdict.
func doctorExit(r *doctor.Report) int {
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError {
			return exitFail
		}
	}
	switch {
	case r.Verdict == nil || r.Verdict.Status == doctor.VerdictMatch:
		return exitOK
	case r.Verdict.Status == doctor.VerdictMismatch:
		return exitFail
	}
	return exitNoVerdict
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

// expectation is the pool spec the job should match: a built-in profile, or a stack's pool.
// invalidStack is an expectation error about the stack file's content (exitFail); any other (a
// profile, stack or pool the command line names and that does not exist) is a usage error.
type invalidStack struct{ error }

// expectationExit is the exit code of an expectation error.
func expectationExit(err error) int {
	var bad invalidStack
	if errors.As(err, &bad) {
		return exitFail
	}
	return exitUsage
}

func expectation(stack, poolName, profile string) (*topology.PoolSpec, string, error) {
	switch {
	case profile != "":
		p, ok := topology.BuiltinProfile(profile)
		if !ok {
			return nil, "", fmt.Errorf("unknown profile %q; built-in profiles: %s", profile, strings.Join(topology.BuiltinProfileNames(), ", "))
		}
		s, err := topology.Derive(profile, p)
		return &s, "profile " + profile, err
	case stack != "":
		cwd, _ := os.Getwd()
		file, err := program.StackFile(cwd, stack)
		if err != nil {
			return nil, "", err
		}
		spec, err := topology.LoadStack(file)
		if err != nil {
			var ces topology.ConfigErrors
			if errors.As(err, &ces) {
				return nil, "", invalidStack{fmt.Errorf("%s is invalid: %v", file, ces)}
			}
			return nil, "", err
		}
		var names []string
		for i, p := range spec.Pools {
			if poolName == "" || p.Name == poolName {
				return &spec.Pools[i], fmt.Sprintf("stack %s, pool %s", stack, p.Name), nil
			}
			names = append(names, p.Name)
		}
		return nil, "", fmt.Errorf("stack %s has no pool %q; pools: %s", stack, poolName, strings.Join(names, ", "))
	}
	return nil, "", nil
}

func writeDoctor(w io.Writer, r *doctor.Report) {
	if len(r.Sources) > 1 {
		fmt.Fprintf(w, "one job, %d logs: %s\n", len(r.Sources), strings.Join(r.Sources, ", "))
	}
	fmt.Fprintf(w, "NCCL %s, net plugin %s, network %s\n", orDash(r.NCCLVersion), strings.TrimSpace(r.NetPlugin+" "+r.PluginVersion), orDash(r.Network))
	if r.Platform != "" || r.Provider != "" {
		fmt.Fprintf(w, "aws-ofi-nccl: platform %s, provider %s, %d NIC(s)", orDash(r.Platform), orDash(r.Provider), r.NICs)
		if len(r.PluginSetEnv) > 0 {
			fmt.Fprintf(w, "; set itself: %s", strings.Join(topology.SortedKeys(r.PluginSetEnv), ", "))
		}
		fmt.Fprintln(w)
	}
	for _, c := range r.Communicators {
		if c.Excerpt {
			fmt.Fprintf(w, "\nconnections without their communicator's Init lines (an excerpt): ranks, nodes and ranks per node are unknown\n")
		} else {
			fmt.Fprintf(w, "\ncommunicator %s: %s ranks on %s node(s), %s per node, %d channels", c.ID, count(c.Ranks), count(c.Nodes), count(c.LocalRanks), c.Channels)
			if c.Parent != "" {
				fmt.Fprintf(w, ", split from %s", c.Parent)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "  intra-node: %s\n  inter-node: %s\n", c.IntraNode, c.InterNode)
		for _, conn := range c.Connections {
			fmt.Fprintf(w, "    %-10s %-32s %-22s %d\n", conn.Where, conn.Transport, conn.Class, conn.Count)
		}
	}
	if r.Topology != nil {
		fmt.Fprintf(w, "\ntopology: %s\n", r.Topology.Summary())
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
