package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/charts"
	"github.com/gpucluster/gpucluster/internal/experiment"
)

// experimentSubcommands are what `gpucluster experiment` runs.
var experimentSubcommands = []string{"plan", "run"}

// defaultMaxDuration bounds an experiment whose command line does not: long enough for a
// cluster's creation, its checks and a benchmark on each stack, short enough that a forgotten
// stack stops its GPU pools the same afternoon.
const defaultMaxDuration = "4h"

func cmdExperiment(args []string, stdout, stderr io.Writer) int {
	usage := "usage: gpucluster experiment plan --stacks A,B[,…] [--max-duration DURATION] [--quota 'NAME=VCPUS' …] [--out DIR] [-o table|json|yaml]\n" +
		"       gpucluster experiment run --stacks A,B[,…] [--job nccl|train] [--repeat N] [--max-duration DURATION] [--quota 'NAME=VCPUS' …] [--keep] [--results DIR]\n"
	return runSubcommand("experiment", usage, experimentSubcommands, map[string]command{"plan": cmdExperimentPlan, "run": cmdExperimentRun}, args, stdout, stderr)
}

// cmdExperimentPlan checks, offline, an experiment over several stacks side by side: every
// stack planned (its review bundle written as `plan` writes it), the vCPU quotas they need
// together, the expiry that holds each, and the most it can cost. Exit 1 when it must not start.
func cmdExperimentPlan(args []string, stdout, stderr io.Writer) int {
	c := newCLI("experiment plan", "experiment plan --stacks A,B[,…] [--max-duration DURATION] [--quota 'NAME=VCPUS' …] [--out DIR] [-o table|json|yaml]", stdout, stderr).withOutput()
	f := c.withExperiment()
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--stacks " + a }); !ok {
		return code
	}
	x, code, ok := c.planExperiment(f)
	if !ok {
		return code
	}
	if code := c.emit(x.plan, func(w io.Writer) { writeExperimentPlan(w, x.plan, x.maxDuration) }); code != exitOK {
		return code
	}
	for _, r := range x.plan.Refusals {
		fmt.Fprintf(stderr, "refused: %s\n", r)
	}
	if len(x.plan.Refusals) > 0 {
		return exitFail
	}
	return exitOK
}

// planExperiment reads the experiment's flags and plans every stack: ok false ends the command
// with code (a usage error, a stack that could not be planned).
func (c *cli) planExperiment(f *experimentFlags) (plannedExperiment, int, bool) {
	x := plannedExperiment{maxDuration: *f.maxDuration}
	var err error
	if x.names, err = experimentStacks(*f.stacks); err != nil {
		return x, c.fail("%v", err), false
	}
	maxDuration, err := parseLifetime(*f.maxDuration)
	if err != nil {
		return x, c.fail("--max-duration %s: %v", *f.maxDuration, err), false
	}
	var specs []topology.StackSpec
	for _, name := range x.names {
		file, code, ok := c.stackFile(name, false)
		if !ok {
			return x, code, false
		}
		x.files = append(x.files, file)
		if spec, err := topology.LoadStack(file, now()); err == nil {
			specs = append(specs, spec) // an invalid file is said by its plan, below
		}
	}
	if err := experiment.QuotaNamesErr(specs, f.account); err != nil {
		return x, c.fail("%v", err), false
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(c.stderr, "gpucluster: %v\n", err)
		return x, exitFail, false
	}
	x.project = projectOr(cwd, x.files[0])
	if x.projectName, err = program.ProjectName(x.project); err != nil {
		fmt.Fprintf(c.stderr, "gpucluster %s: %v\n", c.name, err)
		return x, exitUnreadable, false
	}
	base := *f.out
	if base == "" {
		base = filepath.Join(x.project, "review")
	}
	renderer := charts.OnDemand{ProjectDir: x.project, Progress: c.stderr}
	at := now()
	unplanned := 0
	for i, file := range x.files {
		fmt.Fprintf(c.stderr, "[%d/%d] %s\n", i+1, len(x.files), relative(file))
		dir := filepath.Join(base, x.names[i])
		r, _ := planOne(file, dir, renderer, false, c.stderr, c.stderr)
		if r == nil {
			unplanned++
			continue
		}
		x.stacks = append(x.stacks, experiment.Stack{Name: x.names[i], Spec: r.Spec, Errors: r.Errors(), Review: shown(filepath.Join(dir, "REVIEW.md"))})
	}
	if unplanned > 0 {
		fmt.Fprintf(c.stderr, "gpucluster %s: %d of %d stacks could not be planned (above); the experiment must not start\n", c.name, unplanned, len(x.files))
		return x, exitFail, false
	}
	if x.plan, err = experiment.Check(x.stacks, at, maxDuration, f.account); err != nil {
		fmt.Fprintf(c.stderr, "gpucluster %s: %v\n", c.name, err)
		return x, exitFail, false
	}
	return x, 0, true
}

// experimentStacks reads --stacks: two or more names, each once.
func experimentStacks(text string) ([]string, error) {
	var names []string
	seen := map[string]bool{}
	for _, n := range strings.Split(text, ",") {
		n = strings.TrimSpace(n)
		switch {
		case n == "":
			continue
		case seen[n]:
			return nil, fmt.Errorf("--stacks names %s twice: an experiment compares different stacks", n)
		}
		seen[n] = true
		names = append(names, n)
	}
	if len(names) < 2 {
		return nil, fmt.Errorf("name two stacks or more to compare: --stacks g6e-efa,g6e-ena")
	}
	return names, nil
}

// quotaFlag is --quota NAME=VCPUS, repeated: the vCPU quotas the user says the account allows.
type quotaFlag map[string]int

func (q quotaFlag) String() string {
	parts := make([]string, 0, len(q))
	for _, name := range topology.SortedKeys(q) {
		parts = append(parts, fmt.Sprintf("%s=%d", name, q[name]))
	}
	return strings.Join(parts, ",")
}

func (q quotaFlag) Set(v string) error {
	name, n, ok := strings.Cut(v, "=")
	name = strings.TrimSpace(name)
	vcpus, err := strconv.Atoi(strings.TrimSpace(n))
	if !ok || name == "" || err != nil || vcpus < 1 {
		return fmt.Errorf("write the quota's name and its vCPUs: 'Running On-Demand G and VT instances=384'")
	}
	if _, dup := q[name]; dup {
		return fmt.Errorf("%s is given twice", name)
	}
	q[name] = vcpus
	return nil
}

func writeExperimentPlan(w io.Writer, p experiment.Plan, maxDuration string) {
	names := make([]string, len(p.Stacks))
	for i, s := range p.Stacks {
		names[i] = s.Name
	}
	fmt.Fprintf(w, "Experiment: %s side by side, for at most %s: every stack expires by %s.\n\n", strings.Join(names, ", "), maxDuration, p.Until.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STACK\t$/HOUR AT MOST\tEXPIRES BY\tITS OWN EXPIRY\tPLAN ERRORS\tREVIEW")
	for _, s := range p.Stacks {
		own := "none"
		if !s.Expiry.IsZero() {
			own = s.Expiry.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Name, dollars(s.USDPerHourAtMost, s.PricesComplete), s.ExpiresBy.Format(time.RFC3339), own, s.PlanErrors, s.Review)
	}
	tw.Flush()
	if len(p.Quotas) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "EC2 vCPU QUOTA\tREGION\tSIDE BY SIDE\tLARGEST STACK\tACCOUNT ALLOWS")
		for _, q := range p.Quotas {
			allows := "not said (--quota)"
			if q.Account > 0 {
				allows = strconv.Itoa(q.Account)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", q.Name, q.Region, q.VCPUs, q.Largest, allows)
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nAt most %s: every stack at its maximum until %s (each priced as its REVIEW.md prices it).\n", dollars(p.USDAtMost, p.PricesComplete), p.Until.Format(time.RFC3339))
	if len(p.Refusals) == 0 {
		fmt.Fprintln(w, "Nothing stops the experiment: every plan is clean, the account allows the stacks together, and each expires by the end.")
	} else {
		fmt.Fprintf(w, "The experiment must not start: %d reason(s), each with its fix, on stderr.\n", len(p.Refusals))
	}
}

// dollars is a price, marked as a floor where an item had none.
func dollars(usd float64, complete bool) string {
	if complete {
		return fmt.Sprintf("$%.2f", usd)
	}
	return fmt.Sprintf("$%.2f or more", usd)
}
