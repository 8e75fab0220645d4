package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gpucluster/gpucluster/components/topology"
)

// parseArgs parses flags that may stand before or after positional arguments
// (`profile p5-efa --json` as well as `profile --json p5-efa`).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func cmdProfiles(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("profiles", stderr)
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) > 0 {
		fmt.Fprintln(stderr, "usage: gpucluster profiles")
		return 2
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROFILE\tINSTANCE\tGPUS/NODE\tNODES\tFABRIC\tEFA\tPLACEMENT\tPODS/NODE\tPROVISIONER\tINTRA-NODE\tINTER-NODE")
	for _, name := range topology.BuiltinProfileNames() {
		p, _ := topology.BuiltinProfile(name)
		s, err := topology.Derive(name, p)
		if err != nil { // a built-in that does not derive is a bug; say so rather than hide it
			fmt.Fprintf(stderr, "gpucluster: built-in profile %s: %v\n", name, err)
			return 1
		}
		fmt.Fprintf(tw, "%s\t%s\t%d x %s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n",
			name, s.Instance.Name, s.Instance.GPUCount, strings.TrimPrefix(s.Instance.GPUModel, "NVIDIA "),
			s.Scaling.String(), s.Network.Fabric, s.Network.EFAInterfaces, s.Placement.Strategy,
			s.TrainingPod.PodsPerNode, s.Provisioner, s.NCCL.IntraNode.Class, s.NCCL.InterNode.Class)
	}
	tw.Flush()
	fmt.Fprintln(stdout, "\nDetails: gpucluster profile NAME [--json]")
	return 0
}

func cmdProfile(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("profile", stderr)
	asJSON := fs.Bool("json", false, "print the derived spec as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: gpucluster profile NAME [--json]")
		return 2
	}
	p, ok := topology.BuiltinProfile(pos[0])
	if !ok {
		fmt.Fprintf(stderr, "gpucluster: unknown profile %q; built-in profiles: %s\n", pos[0], strings.Join(topology.BuiltinProfileNames(), ", "))
		return 1
	}
	spec, err := topology.Derive(pos[0], p)
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return 1
	}
	if *asJSON {
		return writeJSON(stdout, stderr, spec)
	}
	writePool(stdout, spec)
	return 0
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", stderr)
	asJSON := fs.Bool("json", false, "print the derived spec as JSON")
	pos, err := parseArgs(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprintln(stderr, "usage: gpucluster validate FILE [--json]")
		return 2
	}
	spec, err := topology.LoadStack(pos[0])
	if err != nil {
		var ces topology.ConfigErrors
		if errors.As(err, &ces) {
			fmt.Fprintf(stderr, "gpucluster: %s is invalid: %d error(s)\n", pos[0], len(ces))
			for _, e := range ces {
				fmt.Fprintf(stderr, "  %s\n", e.Error())
			}
			return 1
		}
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return 1
	}
	for _, w := range spec.Warnings {
		fmt.Fprintf(stderr, "  warning: %s\n", w.Error())
	}
	if note := topology.EnvironmentNote(spec); note != "" {
		fmt.Fprintf(stderr, "  note: %s\n", note)
	}
	if *asJSON {
		return writeJSON(stdout, stderr, spec)
	}
	fmt.Fprintf(stdout, "%s: valid, %d pool(s)\n", pos[0], len(spec.Pools))
	for _, p := range spec.Pools {
		fmt.Fprintln(stdout)
		writePool(stdout, p)
	}
	return 0
}

func writeJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return 1
	}
	return 0
}
