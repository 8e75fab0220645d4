package realengine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
	"github.com/gpucluster/gpucluster/test/realengine/stackgroups"
)

// TestEveryStackHasAGroup: every stack of stacks/ is in the groups of stackgroups.Groups
// exactly once, whole or as both its halves (lifecycle and expiry), every group names only
// stacks that exist, and each group, and nothing else, has its test package under
// test/realengine/stacks that runs it.
func TestEveryStackHasAGroup(t *testing.T) {
	in := map[string]map[string]string{} // stack → part ("" for whole) → group
	for group, entries := range stackgroups.Groups {
		for _, entry := range entries {
			name, part, _ := strings.Cut(entry, "/")
			if part != "" && part != stackgroups.PartLifecycle && part != stackgroups.PartExpiry {
				t.Errorf("group %s: %s: no part %q (have %s and %s)", group, entry, part, stackgroups.PartLifecycle, stackgroups.PartExpiry)
			}
			if in[name] == nil {
				in[name] = map[string]string{}
			}
			if other, ok := in[name][part]; ok {
				t.Errorf("%s is in two groups, %s and %s (stackgroups.Groups): it would run twice", entry, other, group)
			}
			in[name][part] = group
		}
	}
	stacks := enginetest.StackNames(t)
	for _, name := range stacks {
		parts := in[name]
		_, whole := parts[""]
		_, lifecycle := parts[stackgroups.PartLifecycle]
		_, expiry := parts[stackgroups.PartExpiry]
		switch {
		case len(parts) == 0:
			t.Errorf("stacks/Pulumi.%s.yaml is in no group of stackgroups.Groups (test/realengine/stackgroups/stackgroups.go): add it to one, or the real engine never runs it", name)
		case whole && (lifecycle || expiry):
			t.Errorf("stack %s is in stackgroups.Groups whole and in part: a part would run twice", name)
		case !whole && lifecycle != expiry:
			t.Errorf("stack %s is in stackgroups.Groups in one part only (%v): the other never runs", name, parts)
		}
	}
	for name, parts := range in {
		if !slices.Contains(stacks, name) {
			t.Errorf("stackgroups.Groups names stack %s (%v), which has no file in stacks/", name, parts)
		}
	}
	dirs, err := os.ReadDir("stacks")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, d := range dirs {
		have = append(have, d.Name())
		if _, ok := stackgroups.Groups[d.Name()]; !ok {
			t.Errorf("test/realengine/stacks/%s is no group of stackgroups.Groups", d.Name())
		}
	}
	for group := range stackgroups.Groups {
		if !slices.Contains(have, group) {
			t.Errorf("group %s has no test package test/realengine/stacks/%s: its stacks never run", group, group)
			continue
		}
		src, err := os.ReadFile(filepath.Join("stacks", group, group+"_test.go"))
		if err != nil {
			t.Errorf("group %s: %v", group, err)
			continue
		}
		if call := `enginetest.RunStackGroup(t, "` + group + `")`; !strings.Contains(string(src), call) {
			t.Errorf("test/realengine/stacks/%s/%s_test.go does not call %s", group, group, call)
		}
	}
}

// TestEveryStackHasAChange: the tier changes every stack of stacks/ once it is up
// (enginetest.StackChanges), and names no stack that does not exist.
func TestEveryStackHasAChange(t *testing.T) {
	stacks := enginetest.StackNames(t)
	for _, name := range stacks {
		if _, ok := enginetest.StackChanges[name]; !ok {
			t.Errorf("stacks/Pulumi.%s.yaml has no change in enginetest.StackChanges (test/realengine/enginetest/changes.go): add what a user of the running stack would edit", name)
		}
	}
	for name := range enginetest.StackChanges {
		if !slices.Contains(stacks, name) {
			t.Errorf("enginetest.StackChanges names stack %s, which has no file in stacks/", name)
		}
	}
}

// TestEveryWalkthroughRuns: the documents have a walkthrough (the README's benchmark way, from
// `pulumi up` to `bench run` and `pulumi destroy`), and the tier runs each: its stack is one
// whose live cluster the tier checks (enginetest.VerifiedStacks), in a group that runs the
// stack's lifecycle, with a launcher log for its benchmark.
func TestEveryWalkthroughRuns(t *testing.T) {
	ws, err := enginetest.Walkthroughs(enginetest.ProjectDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) == 0 {
		t.Fatal("no walkthrough block in README.md or docs/: the README's benchmark way must be one")
	}
	for _, w := range ws {
		lifecycle := false
		for _, entries := range stackgroups.Groups {
			lifecycle = lifecycle || slices.Contains(entries, w.Stack) || slices.Contains(entries, w.Stack+"/"+stackgroups.PartLifecycle)
		}
		if !lifecycle || !slices.Contains(enginetest.VerifiedStacks, w.Stack) {
			t.Errorf("%s walks through stack %s, which the tier does not run with its live cluster: add it to enginetest.VerifiedStacks and a group's lifecycle", w.Doc, w.Stack)
		}
		if _, ok := enginetest.WalkthroughLaunchers[w.Stack]; !ok {
			t.Errorf("%s walks through stack %s, which has no launcher log in enginetest.WalkthroughLaunchers", w.Doc, w.Stack)
		}
	}
}
