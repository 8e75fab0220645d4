// Package stackgroups divides the stacks of stacks/ among the real-engine tier's test binaries
// (test/realengine/stacks/<group>), and finds the group of a stack: `make stack STACK=<name>`.
// It imports only the standard library, so the command that runs one group builds in a moment.
package stackgroups

import (
	"slices"
	"sort"
	"strings"
)

// Groups divide stacks/ among the test packages test/realengine/stacks/<group>, one test
// binary each (so one go test alarm each), by what the stacks share: a stack added to stacks/
// joins a group here, and TestEveryStackHasAGroup (test/realengine) fails until it does.
// Each group's stacks run in parallel, each with its own API server and workspace.
// An entry is a stack, run whole (RunStackGroup: up, a second up, outputs, its change, the
// expiry set, fired and extended, destroy, on one deployment), or one half of it, each on a
// deployment of its own: "<stack>/lifecycle" (up, a second up, outputs, its change, destroy) and
// "<stack>/expiry" (up, the expiry, destroy). Every stack runs whole: a half deploys the whole
// stack again (its operators' charts, whose megabytes of CRDs every step refreshes) to prove less,
// and with every stack split, the tier took 15 binaries, about 21 minutes warm on two cores. A
// stack with benchmarks (it deploys the MPI operator, Kubeflow Trainer with JobSet and Kueue,
// their controllers alive) has a binary of its own, with at most one stack without: whole, such
// a stack took 174 to 183 s alone here and 296 s on a machine 2.5 to 3 times slower (370 s beside
// another group), and two in one binary 247 s here, too near go test's 10 minutes. g6e-efa is
// the one stack split: its README walkthrough and `gpucluster health` with a failing node add
// kwok jobs' runs to its live cluster, and whole it took 487 to 489 s in full warm runs, past the
// 8 minutes a stack has (405 s alone).
var Groups = map[string][]string{
	"benchmarks":     {"p5-efa"},
	"karpenter":      {"karpenter-p5"},
	"p4d":            {"p4d-efa", "p4d-custom-ami"},
	"p4dpodpergpu":   {"p4d-pod-per-gpu"},
	"g6e":            {"g6e-efa/lifecycle"},
	"g6eexpiry":      {"g6e-efa/expiry"},
	"g6eena":         {"g6e-ena", "dev"},
	"capacityblocks": {"gb200-nvl72", "mixed"},
}

// The halves of a stack's run a group may hold (StackGroups).
const (
	PartLifecycle = "lifecycle"
	PartExpiry    = "expiry"
)

// Of are the groups that run a stack, whole or in part, sorted: one for a stack run whole, two
// for one split into its halves.
func Of(stack string) []string {
	var groups []string
	for group, entries := range Groups {
		if slices.ContainsFunc(entries, func(entry string) bool { return stackOf(entry) == stack }) {
			groups = append(groups, group)
		}
	}
	sort.Strings(groups)
	return groups
}

// Stacks are the stacks the groups run, sorted.
func Stacks() []string {
	var names []string
	for _, entries := range Groups {
		for _, e := range entries {
			if name := stackOf(e); !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names
}

// stackOf is the stack an entry runs, whole or in part.
func stackOf(entry string) string {
	name, _, _ := strings.Cut(entry, "/")
	return name
}
