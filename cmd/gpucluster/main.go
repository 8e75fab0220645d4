// Command gpucluster is the offline side of gpucluster: it lists and explains topology profiles
// and checks stack files, with no cloud credentials and no Pulumi CLI; verify alone reads a live
// cluster (with kubectl, read-only).
package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

const usage = `gpucluster: GPU-cluster topology, planned offline, verified live.

Usage:
  gpucluster plan [--stack NAME | --config FILE | --all] [--out DIR]
                                          evaluate a stack's Pulumi program offline and write its review
                                          bundle (plan.json, manifests/, REVIEW.md); default: the dev stack
  gpucluster doctor --log FILE|DIR [--log …] [--topo FILE] [--stack NAME [--pool NAME] | --profile NAME]
                                          read an NCCL_DEBUG=INFO log ('-': stdin): transports, failure
                                          signatures, and whether they match the profile
  gpucluster bench run --stack NAME [--pool NAME] [--job nccl|train] [--kubeconfig FILE] [--context NAME] [--results DIR]
                                          verify the stack, run a pool's benchmark job on the live cluster,
                                          wait for it, save its logs and judge them (bench report's verdict)
  gpucluster bench report --log FILE|DIR [--log …] [--stack NAME [--pool NAME] | --profile NAME] [--test BINARY] [--nodes N]
  gpucluster bench compare RESULT.json RESULT.json... [--svg FILE]
                                          read nccl-tests output (text or -J JSON): busbw per size, the
                                          transports (NCCL INFO lines), a verdict against published figures
  gpucluster experiment plan --stacks A,B[,…] [--max-duration DURATION] [--quota 'NAME=VCPUS' …]
                                          check an A/B of stacks offline: every plan clean, the vCPU quotas
                                          they need side by side, the expiry that holds each, the most it
                                          can cost
  gpucluster experiment run --stacks A,B[,…] [--job nccl|train] [--repeat N] [--max-duration DURATION] [--keep]
                                          bring the stacks up side by side, run the same job on each,
                                          compare them (time, spread, cost of the result), destroy them
  gpucluster verify --stack NAME [--kubeconfig FILE] [--context NAME]
                                          compare the live cluster with the stack's plan, node by node
                                          (type, zone, labels, taints, GPUs, EFA, agents, controllers);
                                          read-only
  gpucluster health --stack NAME [--pool NAME,…] [--level 1-4] [--dry-run] [--kubeconfig FILE] [--context NAME]
                                          on every GPU node no job holds: DCGM diagnostics, an all-reduce
                                          inside the node and, on EFA pools, over pairs; a failed node is
                                          labelled and tainted as the health gate does
  gpucluster profiles                     list the built-in topology profiles
  gpucluster profile NAME                 print the cluster spec derived from a built-in profile
  gpucluster validate FILE                check a stack file (stacks/Pulumi.<stack>.yaml) and print its spec
  gpucluster preflight                    check the tools pulumi up runs on this machine (pulumi, go,
                                          kubectl, aws) against the versions they must have
  gpucluster expire (--stack NAME | --config FILE) --in DURATION
                                          write gpucluster:expiresAt (now + DURATION, to the minute) into
                                          the stack file, changing nothing else
  gpucluster version                      print the version (also --version)

Every command takes --help. Commands that print data take -o table|json|yaml (--json is -o json).

`

func main() {
	clock, err := clockFromEnv(os.Getenv(envAt), now)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpucluster: %v\n", err)
		os.Exit(exitUsage)
	}
	now = clock
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// commands are gpucluster's subcommands.
var commands = map[string]command{
	"doctor": cmdDoctor, "plan": cmdPlan, "profiles": cmdProfiles, "profile": cmdProfile, "validate": cmdValidate,
	"expire": cmdExpire, "verify": cmdVerify, "health": cmdHealth, "preflight": cmdPreflight, "bench": cmdBench, "experiment": cmdExperiment, "version": cmdVersion,
}

// run is main without the process: it returns the exit code, so tests can call it.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage+"\n"+exitCodeText())
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	if run, ok := commands[cmd]; ok {
		return run(rest, stdout, stderr)
	}
	switch cmd {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage+"\n"+exitCodeText())
		return exitOK
	case "--version", "-version", "-v":
		fmt.Fprintln(stdout, versionText())
		return exitOK
	}
	names := slices.Sorted(maps.Keys(commands))
	fmt.Fprintf(stderr, "gpucluster: unknown command %q%s; commands: %s\n(gpucluster --help describes each)\n", cmd, topology.Suggest(cmd, names), strings.Join(names, ", "))
	return exitUsage
}
