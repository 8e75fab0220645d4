package main

import (
	"fmt"
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
