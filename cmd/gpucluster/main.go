// Command gpucluster is the offline side of gpucluster: it lists and explains topology profiles
// and checks stack files, with no cloud credentials and no Pulumi CLI.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `gpucluster: GPU-cluster topology, offline.

Usage:
  gpucluster plan [--stack NAME | --config FILE | --all] [--out DIR]
                                          evaluate a stack's Pulumi program offline and write its review
                                          bundle (plan.json, manifests/, REVIEW.md); default: the dev stack
  gpucluster doctor --log FILE|DIR [--log …] [--topo FILE] [--stack NAME [--pool NAME] | --profile NAME] [--json]
                                          read an NCCL_DEBUG=INFO log ('-': stdin): transports, failure
                                          signatures, and whether they match the profile
  gpucluster bench report --log FILE|DIR [--log …] [--stack NAME [--pool NAME] | --profile NAME] [--test BINARY] [--nodes N] [--json]
  gpucluster bench compare RESULT.json RESULT.json... [--svg FILE]
                                          read nccl-tests output (text or -J JSON): busbw per size, the
                                          transports (NCCL INFO lines), a verdict against published figures
  gpucluster profiles                     list the built-in topology profiles
  gpucluster profile NAME [--json]        print the cluster spec derived from a built-in profile
  gpucluster validate FILE [--json]       check a stack file (stacks/Pulumi.<stack>.yaml) and print its spec
  gpucluster preflight                    check the tools pulumi up runs on this machine (pulumi, go,
                                          kubectl, aws) against the versions they must have
  gpucluster expire (--stack NAME | --config FILE) --in DURATION
                                          write gpucluster:expiresAt (now + DURATION, to the minute) into
                                          the stack file, changing nothing else

`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code, so tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage+"\n"+exitCodeText())
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "doctor":
		return cmdDoctor(rest, stdout, stderr)
	case "plan":
		return cmdPlan(rest, stdout, stderr)
	case "profiles":
		return cmdProfiles(rest, stdout, stderr)
	case "profile":
		return cmdProfile(rest, stdout, stderr)
	case "validate":
		return cmdValidate(rest, stdout, stderr)
	case "expire":
		return cmdExpire(rest, stdout, stderr)
	case "preflight":
		return cmdPreflight(rest, stdout, stderr)
	case "bench":
		return cmdBench(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage+"\n"+exitCodeText())
		return exitOK
	}
	fmt.Fprintf(stderr, "gpucluster: unknown command %q\n\n%s", cmd, usage)
	return exitUsage
}
