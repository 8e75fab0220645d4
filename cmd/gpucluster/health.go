package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/health"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// cmdHealth runs the deep health checks on the stack's GPU nodes that no job holds.
func cmdHealth(args []string, stdout, stderr io.Writer) int {
	usage := "health --stack NAME [--pool NAME,…] [--level 1-4] [--dry-run] [--kubeconfig FILE] [--context NAME] [--timeout DURATION] [--results DIR] [--poll DURATION] [-o table|json]"
	c := newCLI("health", usage, stdout, stderr)
	stack := c.fs.String("stack", "", "the stack the cluster was deployed from (stacks/Pulumi.<stack>.yaml): its pools' nodes are checked, against its plan")
	pools := c.fs.String("pool", "", "check only these pools (comma-separated; default: every pool)")
	level := c.fs.Int("level", topology.DefaultDiagLevel, "the DCGM diagnostics' level: 1 quick, 2 medium (about 2 minutes), 3 long (about 15), 4 extended (an hour or more)")
	dryRun := c.fs.Bool("dry-run", false, "say which nodes would be checked, how, and which are left alone; change nothing")
	kubeconfig := c.fs.String("kubeconfig", "", "the cluster's kubeconfig (default: what kubectl reads, KUBECONFIG then ~/.kube/config)")
	kubeContext := c.fs.String("context", "", "the kubeconfig's context (default: its current context)")
	timeout := c.fs.Duration("timeout", 0, "how long each check's job may take, image pull included (default: the check's own bound)")
	results := c.fs.String("results", "", "where the checks' logs go: <results>/<stack>/health-<UTC time> (default: the project's results/)")
	poll := c.fs.Duration("poll", defaultPoll, "how often the checks' jobs are read: sooner sees their end sooner, later asks less of the API server")
	output := c.fs.String("o", "table", "the final report: table or json")
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "--stack " + a }); !ok {
		return code
	}
	switch {
	case *stack == "":
		return c.fail("give --stack NAME: the stack the cluster was deployed from")
	case *level < topology.DiagLevelMin || *level > topology.DiagLevelMax:
		return c.fail("--level %d: DCGM's levels are %d to %d", *level, topology.DiagLevelMin, topology.DiagLevelMax)
	case *timeout < 0:
		return c.fail("--timeout %s: give how long each check may take (30m)", *timeout)
	case *poll <= 0:
		return c.fail("--poll %s: give how often to read the checks' jobs (5s)", *poll)
	case *output != "table" && *output != "json":
		return c.fail("-o %s: table or json", *output)
	}
	spec, file, code, ok := c.liveStack(*stack)
	if !ok {
		return code
	}
	started := now()
	var only []string
	if *pools != "" {
		var all []string
		for _, p := range spec.Pools {
			all = append(all, p.Name)
		}
		for _, name := range strings.Split(*pools, ",") {
			if _, found := spec.Pool(name); !found {
				return c.fail("--pool %s: stack %s has no such pool%s; its pools: %s", name, spec.Stack, topology.Suggest(name, all), strings.Join(all, ", "))
			}
			only = append(only, name)
		}
	}
	base := resultsBase(*results, file)
	stamp := started.UTC().Format("20060102T150405Z")
	dir := filepath.Join(base, spec.Stack, "health-"+stamp)
	progress := stdout
	if *output == "json" {
		progress = stderr
	}
	if !*dryRun {
		fmt.Fprintf(progress, "health: stack %s, DCGM diagnostics level %d; logs in %s\n", spec.Stack, *level, shown(dir))
	}
	ctx, stop := runContext()
	defer stop()
	out, err := health.Run(ctx, health.Options{Kubectl: verify.Kubectl{Kubeconfig: *kubeconfig, Context: *kubeContext}, Stack: spec, Pools: only,
		Level: *level, DryRun: *dryRun, Timeout: *timeout, Poll: *poll, Now: now, Out: progress,
		Run: strings.ToLower(stamp), Dir: dir})
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster health: reading the cluster: %v\nnothing was changed\n", err)
		return exitUnreadable
	}
	if *output == "json" {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		writeHealth(stdout, out, *dryRun)
	}
	for _, l := range out.Left {
		fmt.Fprintf(stderr, "gpucluster health: left behind: %s\n", l)
	}
	return healthExit(out, *dryRun, stderr)
}

// writeHealth is the report's table: one row per node, its checks' outcomes, and what the run
// did to it (or why it was left alone).
func writeHealth(w io.Writer, out *health.Outcome, dryRun bool) {
	if len(out.Results) == 0 {
		fmt.Fprintln(w, "no node of the stack's pools is in the cluster")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "NODE\tPOOL\tSTATUS\t%s\tNOTE\n", strings.ToUpper(strings.Join(topology.DeepHealthChecks, "\t")))
	var evidence []string
	for _, r := range out.Results {
		cells := make([]string, len(topology.DeepHealthChecks))
		for i, name := range topology.DeepHealthChecks {
			cells[i] = "-"
			for _, c := range r.Checks {
				if c.Name == name {
					cells[i] = c.Status
					if c.Status != health.Pass {
						evidence = append(evidence, fmt.Sprintf("%s %s %s: %s", r.Node, c.Name, c.Status, c.Evidence))
					}
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Node, r.Pool, r.Status, strings.Join(cells, "\t"), orWord(r.Why, r.Marked))
	}
	tw.Flush()
	for _, e := range evidence {
		fmt.Fprintln(w, "  "+e)
	}
	if out.Interrupted {
		fmt.Fprintln(w, "interrupted: the checks not finished say unknown; every node held and not failed was given back")
	}
	if dryRun {
		fmt.Fprintln(w, "dry run: nothing was changed")
	}
}

// healthExit: 1 when a node failed or something was left behind, 3 when no node could be
// judged, else 0.
func healthExit(out *health.Outcome, dryRun bool, stderr io.Writer) int {
	if dryRun {
		return exitOK
	}
	failed, judged, checked := 0, 0, 0
	for _, r := range out.Results {
		switch r.Status {
		case health.Fail:
			failed++
			judged++
		case health.Pass:
			judged++
		}
		if r.Status != health.Skipped {
			checked++
		}
	}
	switch {
	case failed > 0 || len(out.Left) > 0:
		if failed > 0 {
			fmt.Fprintf(stderr, "gpucluster health: %d node(s) failed: they keep %s and take no job (kubectl describe node shows the event)\n", failed, topology.HealthTaint.Key)
		}
		return exitFail
	case checked == 0:
		fmt.Fprintln(stderr, "gpucluster health: no node was free to check")
		return exitNoVerdict
	case judged < checked:
		fmt.Fprintf(stderr, "gpucluster health: %d of %d node(s) could not be judged\n", checked-judged, checked)
		return exitNoVerdict
	}
	return exitOK
}
