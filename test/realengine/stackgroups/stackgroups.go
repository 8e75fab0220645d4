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
// An entry is a stack, run whole (RunStackGroup), or one half of it: "<stack>/lifecycle" (up, a
// second up, outputs, its change, destroy) and "<stack>/expiry" (up, the expiry set, fired and
// extended, destroy), each on a deployment of its own. Every stack with benchmarks is split so,
// one half to a group: it deploys the operators' charts (MPI operator, Kubeflow Trainer with
// JobSet, Kueue) with their controllers alive, whose megabytes of CRDs every step refreshes. Whole,
// such a stack took 174 to 183 s alone here and 296 s on a machine 2.5 to 3 times slower (370 s
// beside another group), and two in one binary 247 s here: too near go test's 10 minutes.
var Groups = map[string][]string{
	"benchmarks":         {"p5-efa/" + PartLifecycle},
	"benchmarkexpiry":    {"p5-efa/" + PartExpiry},
	"karpenter":          {"karpenter-p5/" + PartLifecycle},
	"karpenterexpiry":    {"karpenter-p5/" + PartExpiry},
	"p4d":                {"p4d-custom-ami", "p4d-efa/" + PartLifecycle},
	"p4dexpiry":          {"p4d-efa/" + PartExpiry},
	"p4dpodpergpu":       {"p4d-pod-per-gpu/" + PartLifecycle},
	"p4dpodpergpuexpiry": {"p4d-pod-per-gpu/" + PartExpiry},
	"g6e":                {"dev", "g6e-efa/" + PartLifecycle},
	"g6eexpiry":          {"g6e-efa/" + PartExpiry},
	"g6eena":             {"g6e-ena/" + PartLifecycle},
	"g6eenaexpiry":       {"g6e-ena/" + PartExpiry},
	"capacityblocks":     {"mixed", "gb200-nvl72/" + PartLifecycle},
	"gb200expiry":        {"gb200-nvl72/" + PartExpiry},
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
		if slices.ContainsFunc(entries, func(entry string) bool {
			name, _, _ := strings.Cut(entry, "/")
			return name == stack
		}) {
			groups = append(groups, group)
		}
	}
	sort.Strings(groups)
	return groups
}
