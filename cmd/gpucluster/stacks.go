package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
)

// stackFile is the file of a stack the command line names with --stack. A path is refused with
// the flag meant (the name, or --config where the command has it), and a stack that does not
// exist with the one meant: both are usage errors.
func (c *cli) stackFile(name string, hasConfig bool) (string, int, bool) {
	if strings.ContainsAny(name, `/\`) || strings.HasSuffix(name, ".yaml") {
		hint := "--stack " + topology.StackName(name)
		if hasConfig {
			hint += ", or --config " + name + " for a file anywhere"
		}
		return "", c.fail("--stack takes a stack's name, not a file: %s", hint), false
	}
	cwd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(c.stderr, "gpucluster %s: %v\n", c.name, err)
		return "", exitFail, false
	}
	f, err := program.StackFile(cwd, name)
	if err != nil {
		fmt.Fprintf(c.stderr, "gpucluster %s: %v\n", c.name, err)
		return "", exitUnreadable, false
	}
	if _, err := os.Stat(f); err != nil {
		names := stackNames(filepath.Dir(f))
		return "", c.fail("no stack %q%s: %s does not exist; stacks: %s", name, topology.Suggest(name, names), relative(f), strings.Join(names, ", ")), false
	}
	return f, 0, true
}

// stackOrConfig is the stack file of a command that takes --stack NAME or --config FILE, exactly
// one of them.
func (c *cli) stackOrConfig(stack, config string) (string, int, bool) {
	if (stack == "") == (config == "") {
		return "", c.fail("name the stack file once: --stack NAME or --config FILE"), false
	}
	if config != "" {
		return config, 0, true
	}
	return c.stackFile(stack, true)
}

// loadStack derives a stack file: an invalid one is said error by error (exit 1), one that
// cannot be read is exit 4.
func loadStack(file string, stderr io.Writer) (topology.StackSpec, int, bool) {
	spec, err := topology.LoadStack(file, now())
	if err != nil {
		var ces topology.ConfigErrors
		if errors.As(err, &ces) {
			fmt.Fprintf(stderr, "gpucluster: %s is invalid: %d error(s)\n", file, len(ces))
			for _, e := range ces {
				fmt.Fprintf(stderr, "  %s\n", e.Error())
			}
			return spec, exitFail, false
		}
		fmt.Fprintf(stderr, "gpucluster: %v\n", err)
		return spec, exitUnreadable, false
	}
	return spec, 0, true
}

// liveStack is the stack a command that works on a live cluster runs against (bench run,
// health): its file read and validated, at the stack's own day, with the file's path.
func (c *cli) liveStack(name string) (topology.StackSpec, string, int, bool) {
	file, code, ok := c.stackFile(name, false)
	if !ok {
		return topology.StackSpec{}, "", code, false
	}
	spec, code, ok := loadStack(relative(file), c.stderr)
	if !ok {
		return topology.StackSpec{}, "", code, false
	}
	return spec.AtTime(spec.At), file, 0, true
}

// resultsBase is where a live command's run directories go: --results, else the project's
// results/.
func resultsBase(flag, stackFile string) string {
	if flag != "" {
		return flag
	}
	cwd, _ := os.Getwd()
	return filepath.Join(projectOr(cwd, stackFile), "results")
}
