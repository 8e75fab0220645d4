package realengine_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/realengine/enginetest"
)

// TestEveryStackHasAGroup: every stack of stacks/ is in exactly one group of
// enginetest.StackGroups, every group names only stacks that exist, and each group, and nothing
// else, has its test package under internal/realengine/stacks that runs it.
func TestEveryStackHasAGroup(t *testing.T) {
	in := map[string]string{}
	for group, names := range enginetest.StackGroups {
		for _, name := range names {
			if other, ok := in[name]; ok {
				t.Errorf("stack %s is in two groups, %s and %s (enginetest.StackGroups): it would run twice", name, other, group)
			}
			in[name] = group
		}
	}
	stacks := enginetest.StackNames(t)
	for _, name := range stacks {
		if _, ok := in[name]; !ok {
			t.Errorf("stacks/Pulumi.%s.yaml is in no group of enginetest.StackGroups (internal/realengine/enginetest/stacks.go): add it to one, or the real engine never runs it", name)
		}
	}
	for name, group := range in {
		if !slices.Contains(stacks, name) {
			t.Errorf("group %s names stack %s, which has no file in stacks/", group, name)
		}
	}
	dirs, err := os.ReadDir("stacks")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, d := range dirs {
		have = append(have, d.Name())
		if _, ok := enginetest.StackGroups[d.Name()]; !ok {
			t.Errorf("internal/realengine/stacks/%s is no group of enginetest.StackGroups", d.Name())
		}
	}
	for group := range enginetest.StackGroups {
		if !slices.Contains(have, group) {
			t.Errorf("group %s has no test package internal/realengine/stacks/%s: its stacks never run", group, group)
			continue
		}
		src, err := os.ReadFile(filepath.Join("stacks", group, group+"_test.go"))
		if err != nil {
			t.Errorf("group %s: %v", group, err)
			continue
		}
		if call := `enginetest.RunStackGroup(t, "` + group + `")`; !strings.Contains(string(src), call) {
			t.Errorf("internal/realengine/stacks/%s/%s_test.go does not call %s", group, group, call)
		}
	}
}
