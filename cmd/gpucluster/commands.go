package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"go.yaml.in/yaml/v3"

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

func cmdProfiles(args []string, stdout, stderr io.Writer) int {
	c := newCLI("profiles", "profiles [-o table|json|yaml]", stdout, stderr).withOutput()
	if code, ok := c.parseFlagsOnly(args, func(a string) string { return "; for one profile: gpucluster profile " + a }); !ok {
		return code
	}
	var specs []topology.PoolSpec
	for _, name := range topology.BuiltinProfileNames() {
		p, _ := topology.BuiltinProfile(name)
		s, err := topology.Derive(name, p)
		if err != nil { // a built-in that does not derive is a bug; say so rather than hide it
			fmt.Fprintf(stderr, "gpucluster: built-in profile %s: %v\n", name, err)
			return exitFail
		}
		specs = append(specs, s)
	}
	return c.emit(specs, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PROFILE\tINSTANCE\tGPUS/NODE\tNODES\tFABRIC\tEFA\tPLACEMENT\tPODS/NODE\tPROVISIONER\tINTRA-NODE\tINTER-NODE")
		for _, s := range specs {
			fmt.Fprintf(tw, "%s\t%s\t%d x %s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n",
				s.Profile, s.Instance.Name, s.Instance.GPUCount, strings.TrimPrefix(s.Instance.GPUModel, "NVIDIA "),
				s.Scaling.String(), s.Network.Fabric, s.Network.EFAInterfaces, s.Placement.Strategy,
				s.TrainingPod.PodsPerNode, s.Provisioner, s.NCCL.IntraNode.Class, s.NCCL.InterNode.Class)
		}
		tw.Flush()
		fmt.Fprintln(w, "\nDetails: gpucluster profile NAME [-o json|yaml]")
	})
}

func cmdProfile(args []string, stdout, stderr io.Writer) int {
	c := newCLI("profile", "profile NAME [-o table|json|yaml]", stdout, stderr).withOutput()
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.fail("give one profile name (gpucluster profiles lists them: %s)", strings.Join(topology.BuiltinProfileNames(), ", "))
	}
	spec, code, ok := c.profile(pos[0])
	if !ok {
		return code
	}
	return c.emit(spec, func(w io.Writer) { writePool(w, *spec) })
}

// profile is a built-in profile's derived spec; an unknown name is a usage error that names
// the profile meant.
func (c *cli) profile(name string) (*topology.PoolSpec, int, bool) {
	p, ok := topology.BuiltinProfile(name)
	if !ok {
		return nil, c.fail("no built-in profile %q%s; profiles: %s", name,
			topology.Suggest(name, topology.BuiltinProfileNames()), strings.Join(topology.BuiltinProfileNames(), ", ")), false
	}
	spec, err := topology.Derive(name, p)
	if err != nil {
		fmt.Fprintf(c.stderr, "gpucluster: built-in profile %s: %v\n", name, err)
		return nil, exitFail, false
	}
	return &spec, 0, true
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	c := newCLI("validate", "validate FILE [-o table|json|yaml]", stdout, stderr).withOutput()
	pos, code, ok := c.parse(args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return c.fail("give one stack file, such as stacks/Pulumi.dev.yaml")
	}
	spec, code, ok := loadStack(pos[0], stderr)
	if !ok {
		return code
	}
	for _, w := range spec.Warnings {
		fmt.Fprintf(stderr, "  warning: %s\n", w.Error())
	}
	if note := topology.EnvironmentNote(spec); note != "" {
		fmt.Fprintf(stderr, "  note: %s\n", note)
	}
	return c.emit(spec, func(w io.Writer) {
		fmt.Fprintf(w, "%s: valid\n", pos[0])
		writeStackSummary(w, spec)
		for _, p := range spec.Pools {
			fmt.Fprintln(w)
			writePool(w, p)
		}
	})
}

// emit prints v as -o asks: the command's own table, JSON or YAML (the same fields as JSON).
func (c *cli) emit(v any, table func(w io.Writer)) int {
	switch c.format() {
	case formatJSON:
		return writeJSON(c.stdout, c.stderr, v)
	case formatYAML:
		return writeYAML(c.stdout, c.stderr, v)
	}
	table(c.stdout)
	return exitOK
}

// blockStyle drops the JSON styles a node was read with (flow mappings, quoted strings): YAML
// picks its block style and quotes only what needs it.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// writeYAML prints v as YAML with JSON's field names and order: its JSON, re-encoded.
func writeYAML(stdout, stderr io.Writer, v any) int {
	raw, err := json.Marshal(v)
	if err == nil {
		var node yaml.Node
		if err = yaml.Unmarshal(raw, &node); err == nil {
			blockStyle(&node)
			enc := yaml.NewEncoder(stdout)
			enc.SetIndent(2)
			if err = enc.Encode(&node); err == nil {
				err = enc.Close()
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return exitFail
	}
	return exitOK
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
