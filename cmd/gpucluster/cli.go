package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// cli is one command's command line: its flags and usage line, and how the command ends when
// the line asks for help (usage and every flag on stdout, exit 0) or is wrong (what was wrong,
// the likely fix and the usage on stderr, exit 2).
type cli struct {
	fs     *flag.FlagSet
	name   string // "plan", "bench report"
	usage  string // the usage line after "gpucluster "
	stdout io.Writer
	stderr io.Writer
	output *string // -o, when the command prints data
}

func newCLI(name, usage string, stdout, stderr io.Writer) *cli {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are said once, by fail
	return &cli{fs: fs, name: name, usage: usage, stdout: stdout, stderr: stderr}
}

// Output formats of -o.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatYAML  = "yaml"
)

var formats = []string{formatTable, formatJSON, formatYAML}

// withOutput gives the command -o json|yaml|table (default table) and --json, kept as the
// spelling of -o json it had first.
func (c *cli) withOutput() *cli {
	c.output = c.fs.String("o", formatTable, "output format: "+strings.Join(formats, ", "))
	c.fs.BoolFunc("json", "the same as -o json", func(string) error { *c.output = formatJSON; return nil })
	return c
}

// format is the output format asked for.
func (c *cli) format() string { return *c.output }

// parse reads the flags, which may stand before or after positional arguments. ok false ends
// the command with code: --help (0) or a wrong flag or -o value (2).
func (c *cli) parse(args []string) (pos []string, code int, ok bool) {
	pos, err := parseArgs(c.fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.help()
		return nil, exitOK, false
	case err != nil:
		return nil, c.fail("%s", c.flagError(err)), false
	}
	if c.output != nil && !slices.Contains(formats, *c.output) {
		return nil, c.fail("-o %q is not an output format: use %s", *c.output, strings.Join(formats, ", ")), false
	}
	return pos, 0, true
}

// flagError says what the flag package found wrong, with the flag meant when one is close.
func (c *cli) flagError(err error) string {
	msg := err.Error()
	name, unknown := strings.CutPrefix(msg, "flag provided but not defined: -")
	if !unknown {
		return msg
	}
	var known []string
	c.fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
	return fmt.Sprintf("unknown flag --%s%s", name, topology.Suggest(name, known))
}

func (c *cli) help() {
	fmt.Fprintf(c.stdout, "usage: gpucluster %s\n\nFlags:\n", c.usage)
	c.fs.SetOutput(c.stdout)
	c.fs.PrintDefaults()
	c.fs.SetOutput(io.Discard)
	fmt.Fprint(c.stdout, "\n"+exitCodeText())
}

// fail says what was wrong on the command line and how to write it: exit 2.
func (c *cli) fail(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "gpucluster %s: %s\nusage: gpucluster %s\n(gpucluster %s --help lists every flag)\n",
		c.name, fmt.Sprintf(format, a...), c.usage, c.name)
	return exitUsage
}

// noPositional refuses arguments the command takes as flags, naming the flag each one was
// likely meant for (`plan p5-efa` is `plan --stack p5-efa`; `doctor job.log` is `doctor --log job.log`).
func (c *cli) noPositional(pos []string, meant func(arg string) string) (int, bool) {
	if len(pos) == 0 {
		return 0, true
	}
	hint := ""
	if meant != nil {
		if m := meant(pos[0]); m != "" {
			hint = fmt.Sprintf(": did you mean `gpucluster %s %s`?", c.name, m)
		}
	}
	return c.fail("%q: this command takes no argument without a flag%s", pos[0], hint), false
}

// parseFlagsOnly is parse for a command that takes only flags: an argument without one is
// refused with the flag it was likely meant for (meant may be nil).
func (c *cli) parseFlagsOnly(args []string, meant func(arg string) string) (int, bool) {
	pos, code, ok := c.parse(args)
	if !ok {
		return code, false
	}
	return c.noPositional(pos, meant)
}

// command is a command or a subcommand: its arguments in, its exit code out.
type command = func(args []string, stdout, stderr io.Writer) int

// runSubcommand runs the subcommand args name of a command that has them (bench, experiment),
// in names' order in what it says: --help prints usage (exit 0); none, or one that does not
// exist, is a usage error naming them.
func runSubcommand(name, usage string, names []string, subs map[string]command, args []string, stdout, stderr io.Writer) int {
	list := names[0]
	if n := len(names); n > 1 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	switch {
	case len(args) > 0 && subs[args[0]] != nil:
		return subs[args[0]](args[1:], stdout, stderr)
	case len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help"):
		fmt.Fprint(stdout, usage)
		return exitOK
	case len(args) == 0:
		fmt.Fprintf(stderr, "gpucluster %s: give a subcommand: %s\n%s", name, list, usage)
	default:
		fmt.Fprintf(stderr, "gpucluster %s: no subcommand %q%s; %s runs %s\n%s", name, args[0], topology.Suggest(args[0], names), name, list, usage)
	}
	return exitUsage
}
