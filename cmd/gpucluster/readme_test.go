package main

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns the README text from a "## title" heading to the next "## " heading.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	start := strings.Index(doc, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("README has no section %q", title)
	}
	rest := doc[start+len(title)+4:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

var firstCell = regexp.MustCompile("(?m)^\\| `([^`]+)`")

// expandBraces turns "a.{b,c}.d" into "a.b.d" and "a.c.d" (the README's shorthand).
func expandBraces(s string) []string {
	open := strings.Index(s, "{")
	if open < 0 {
		return []string{s}
	}
	end := strings.Index(s[open:], "}") + open
	var out []string
	for _, alt := range strings.Split(s[open+1:end], ",") {
		out = append(out, expandBraces(s[:open]+alt+s[end+1:])...)
	}
	return out
}

func TestReadmeDocumentsEverySpecJSONField(t *testing.T) {
	documented := map[string]bool{}
	for _, m := range firstCell.FindAllStringSubmatch(section(t, readme(t), "Spec JSON"), -1) {
		for _, p := range expandBraces(m[1]) {
			documented[p] = true
		}
	}
	actual := map[string]bool{}
	for _, f := range jsonFields(topology.PoolSpec{}) {
		actual[f.path] = true
	}
	compareSets(t, "spec JSON field", actual, documented)
}

func TestReadmeDocumentsEveryPoolKeyAndProfile(t *testing.T) {
	doc := readme(t)
	documented := map[string]bool{}
	// A row's first cell may name several keys: "| `minNodes`, `maxNodes` |".
	for _, row := range regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|").FindAllStringSubmatch(section(t, doc, "Stack files"), -1) {
		for _, k := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[1], -1) {
			documented[k[1]] = true
		}
	}
	actual := map[string]bool{}
	for _, k := range topology.PoolKeys() {
		actual[k] = true
	}
	compareSets(t, "pool key", actual, documented)

	profiles := map[string]bool{}
	for _, m := range firstCell.FindAllStringSubmatch(section(t, doc, "Built-in profiles"), -1) {
		profiles[m[1]] = true
	}
	builtins := map[string]bool{}
	for _, n := range topology.BuiltinProfileNames() {
		builtins[n] = true
	}
	compareSets(t, "built-in profile", builtins, profiles)
}

// TestReadmeQuickStartHasTheTwoCommands: one runs the main job, one runs the tests, and .ci/run
// runs that same test command.
func TestReadmeQuickStartHasTheTwoCommands(t *testing.T) {
	qs := section(t, readme(t), "Quick start")
	block := qs[strings.Index(qs, "```sh\n")+6:]
	block = block[:strings.Index(block, "```")]
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "go run ./cmd/gpucluster ") || cmds[1] != "go test ./..." {
		t.Fatalf("quick start commands %q", cmds)
	}
	args := strings.Fields(strings.TrimPrefix(cmds[0], "go run ./cmd/gpucluster "))
	if code, _, errOut := runCLI(args...); code != 0 {
		t.Errorf("the README's first command fails: %s", errOut)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), cmds[1]) {
		t.Errorf(".ci/run does not run %q", cmds[1])
	}
}

func compareSets(t *testing.T, what string, actual, documented map[string]bool) {
	t.Helper()
	var missing, stale []string
	for k := range actual {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !actual[k] {
			stale = append(stale, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(stale)
	if len(missing) > 0 {
		t.Errorf("README does not document %s(s): %v", what, missing)
	}
	if len(stale) > 0 {
		t.Errorf("README documents %s(s) that do not exist: %v", what, stale)
	}
}
