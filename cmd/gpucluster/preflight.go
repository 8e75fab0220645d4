package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gpucluster/gpucluster/internal/preflight"
)

// cmdPreflight checks the programs `pulumi up` runs on this machine (internal/preflight): one
// line per tool, and for each one missing or too old, why it is needed and how to get it.
func cmdPreflight(args []string, stdout, stderr io.Writer) int {
	c := newCLI("preflight", "preflight", stdout, stderr)
	if code, ok := c.parseFlagsOnly(args, nil); !ok {
		return code
	}
	results := preflight.Check()
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tFOUND\tNEEDS\tSTATUS")
	failed := 0
	for _, r := range results {
		found, status := r.Version, "ok"
		if found == "" {
			found = "-"
		}
		if r.Err != nil {
			status, failed = "missing or too old", failed+1
		}
		fmt.Fprintf(tw, "%s\t%s\t>= %s\t%s\n", r.Tool.Command, found, r.Tool.Min, status)
	}
	tw.Flush()
	for _, r := range results {
		if r.Err != nil {
			fmt.Fprintf(stdout, "\n%s: %v\n", r.Tool.Command, r.Err)
		}
	}
	if failed > 0 {
		fmt.Fprintf(stdout, "\n%d of %d tools are missing or too old: pulumi up would fail before it creates anything.\n", failed, len(results))
		return 1
	}
	fmt.Fprintln(stdout, "\nEvery tool pulumi up runs here is present. AWS credentials and quotas are checked by AWS, not here.")
	return 0
}
