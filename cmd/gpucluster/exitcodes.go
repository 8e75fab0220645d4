package main

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/internal/exitcode"
)

// Exit codes, the same for every command: one table, printed by --help and in docs/cli.md
// ("Exit codes"), and held to both by TestExitCodesAreOneTable.
const (
	exitOK         = exitcode.OK
	exitFail       = exitcode.Fail
	exitUsage      = exitcode.Usage
	exitNoVerdict  = exitcode.NoVerdict
	exitUnreadable = exitcode.Unreadable
)

var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "ok: the input was read and nothing in it fails"},
	{exitFail, "the input was read and fails: an invalid stack file (validate, plan, experiment, expire, verify, and --stack of doctor and bench), an error finding (plan, doctor, verify), an experiment that must not start or whose comparison is not whole (experiment), a verdict mismatch (doctor), a failed run (bench report, bench run), a run that did not finish or was refused because verify finds an error (bench run), a job of the same name already in the cluster (bench run), a node that failed its checks or something the run could not clean up (health), a missing or too old tool (preflight), a Helm chart not rendered with --require-charts (plan)"},
	{exitUsage, "usage: the command line is wrong (an unknown command or flag, a missing or conflicting argument, a stack, pool or profile that does not exist)"},
	{exitNoVerdict, "a verdict was asked for (--stack, --profile) and the input cannot give one (doctor, bench report, bench run); no node free to check, or a node no check could judge (health)"},
	{exitUnreadable, "the input cannot be read: no such file, a log with no NCCL output, a table that is not nccl-tests' (doctor, bench), a cluster kubectl cannot read (verify, bench run, health)"},
}

// exitCodeText is the table as --help prints it.
func exitCodeText() string {
	var b strings.Builder
	b.WriteString("Exit codes (every command):\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", e.code, e.meaning)
	}
	return b.String()
}

// exitCodeMarkdown is the table as docs/cli.md shows it.
func exitCodeMarkdown() string {
	var b strings.Builder
	b.WriteString("| exit | meaning |\n|---:|---|\n")
	for _, e := range exitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", e.code, e.meaning)
	}
	return b.String()
}
