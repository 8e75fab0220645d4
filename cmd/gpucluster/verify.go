package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// readTimeout bounds one read of the cluster: every kubectl request has its own 30 s, and a
// credential plugin that hangs must not hold the command forever.
const readTimeout = 3 * time.Minute

// cmdVerify compares a live cluster with its stack's plan, read-only.
func cmdVerify(args []string, stdout, stderr io.Writer) int {
	c := newCLI("verify", "verify (--stack NAME | --config FILE) [--kubeconfig FILE] [--context NAME] [--wait DURATION] [-o table|json|yaml]", stdout, stderr).withOutput()
	stack := c.fs.String("stack", "", "the stack the cluster was deployed from: its plan (stacks/Pulumi.<stack>.yaml) is what the cluster must match")
	config := c.fs.String("config", "", "a stack file anywhere, instead of --stack")
	kubeconfig := c.fs.String("kubeconfig", "", "the cluster's kubeconfig (default: what kubectl reads, KUBECONFIG then ~/.kube/config)")
	kubeContext := c.fs.String("context", "", "the kubeconfig's context (default: its current context)")
	wait := c.fs.Duration("wait", 0, "read the cluster again every "+waitInterval.String()+" until it matches the plan or this time is up (10m: right after pulumi up, while nodes join and their agents start)")
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--stack " + a }); !ok {
		return code
	}
	if *wait < 0 {
		return c.fail("--wait %s: give how long to wait for the cluster to match (10m), or 0 to read it once", *wait)
	}
	file, code, ok := c.stackOrConfig(*stack, *config)
	if !ok {
		return code
	}
	spec, code, ok := loadStack(relative(file), stderr)
	if !ok {
		return code
	}
	spec = spec.AtTime(spec.At) // what `pulumi up` applies now: an expired stack's pools at zero
	kubectl := verify.Kubectl{Kubeconfig: *kubeconfig, Context: *kubeContext}
	report, err := verifyUntil(spec, func(ctx context.Context) (*verify.Cluster, error) { return kubectl.Read(ctx, spec) }, *wait, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster verify: reading the cluster: %v\nnothing was checked\n", err)
		return exitUnreadable
	}
	code = c.emit(report, func(w io.Writer) { writeVerify(w, report) })
	if code == exitOK && report.Errors > 0 {
		return exitFail
	}
	return code
}

// waitInterval is how often --wait reads the cluster again.
const waitInterval = 10 * time.Second

// sleep is how --wait waits (a variable so that tests need not).
var sleep = time.Sleep

// verifyUntil checks the cluster once, or with wait until it matches the plan or wait is up,
// saying on stderr what it still waits for. A read that fails while waiting is tried again (an
// endpoint or credential plugin that fails for a moment); the last read's error is returned if
// none succeeded.
func verifyUntil(spec topology.StackSpec, read func(context.Context) (*verify.Cluster, error), wait time.Duration, stderr io.Writer) (verify.Report, error) {
	deadline := now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		cluster, err := read(ctx)
		cancel()
		var report verify.Report
		if err == nil {
			report = verify.Check(spec, cluster)
			if report.Errors == 0 {
				return report, nil
			}
		}
		if !now().Before(deadline) {
			return report, err
		}
		if err != nil {
			fmt.Fprintf(stderr, "verify: cannot read the cluster yet (%v); again in %s\n", err, waitInterval)
		} else {
			fmt.Fprintf(stderr, "verify: %d error(s) (%s); again in %s, until %s\n", report.Errors, errorCodes(report), waitInterval, deadline.UTC().Format(time.TimeOnly))
		}
		sleep(waitInterval)
	}
}

// errorCodes are the report's distinct error codes, in order.
func errorCodes(r verify.Report) string {
	var codes []string
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError && !slices.Contains(codes, f.Code) {
			codes = append(codes, f.Code)
		}
	}
	return strings.Join(codes, ", ")
}

// writeVerify prints the pools, then one line per finding: where, what differs, the fix.
func writeVerify(w io.Writer, r verify.Report) {
	fmt.Fprintf(w, "stack %s (%s) against the live cluster\n", r.Stack, relative(r.Source))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POOL\tINSTANCE\tPROVISIONER\tNODES\tPLANNED")
	for _, p := range r.Pools {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.Name, p.Instance, p.Provisioner, len(p.Nodes), p.Planned)
	}
	tw.Flush()
	if len(r.Findings) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range r.Findings {
		fmt.Fprintln(w, findingLine(f))
	}
	fmt.Fprintln(w)
	switch {
	case r.Errors > 0:
		fmt.Fprintf(w, "verify: %d error(s), %d warning(s): the cluster differs from the plan of stack %s\n", r.Errors, r.Warnings, r.Stack)
	default:
		nodes := 0
		for _, p := range r.Pools {
			nodes += len(p.Nodes)
		}
		fmt.Fprintf(w, "verify: the cluster matches the plan of stack %s (%d pool(s), %d GPU node(s)), %d warning(s)\n", r.Stack, len(r.Pools), nodes, r.Warnings)
	}
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// verifyCodeMarkdown is verify's finding codes as docs/cli.md shows them.
func verifyCodeMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | severity | means |\n|---|---|---|\n")
	for _, c := range verify.Codes {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.Code, c.Severity, c.Means)
	}
	return b.String()
}

// findingLine is one verify finding as a person reads it: severity and code, where, what
// differs, and the fix (verify's table, bench run's refusal and RESULT.md).
func findingLine(f verify.Finding) string {
	where := []string{f.Pool}
	if f.Node != "" {
		where = append(where, "node "+f.Node)
	}
	if f.Object != "" {
		where = append(where, f.Object)
	}
	return fmt.Sprintf("%s %s [%s]: %s. Fix: %s", f.Severity, f.Code, strings.Join(nonEmpty(where), ", "), f.Message, f.Fix)
}
