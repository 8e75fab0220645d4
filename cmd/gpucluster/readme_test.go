package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/doctor"
)

func readme(t *testing.T) string { return docText(t, "README.md") }

// docText is a file of the documentation, by its path from the repository root.
func docText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section returns a document's text from a "## title" heading to the next "## " heading.
func section(t *testing.T, doc, title string) string {
	t.Helper()
	start := strings.Index(doc, "\n## "+title+"\n")
	if start < 0 {
		t.Fatalf("no section %q", title)
	}
	rest := doc[start+len(title)+4:]
	if end := strings.Index(rest, "\n## "); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

var firstCell = regexp.MustCompile("(?m)^\\| `([^`]+)`")

// expandBraces turns "a.{b,c}.d" into "a.b.d" and "a.c.d" (the docs' shorthand).
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
	doc := section(t, docText(t, "docs/json.md"), "Spec JSON")
	split := strings.Index(doc, "### Pool spec")
	if split < 0 {
		t.Fatal("no ### Pool spec table")
	}
	documented := func(table string) map[string]bool {
		out := map[string]bool{}
		for _, m := range firstCell.FindAllStringSubmatch(table, -1) {
			for _, p := range expandBraces(m[1]) {
				out[p] = true
			}
		}
		return out
	}
	pool, stack := map[string]bool{}, map[string]bool{}
	for _, f := range jsonFields(topology.PoolSpec{}) {
		pool[f.path] = true
	}
	for _, f := range jsonFields(topology.StackSpec{}) {
		if !strings.HasPrefix(f.path, "pools[].") { // documented by the pool table
			stack[f.path] = true
		}
	}
	compareSets(t, "pool spec JSON field", pool, documented(doc[split:]))
	compareSets(t, "stack spec JSON field", stack, documented(doc[:split]))
}

func TestReadmeDocumentsEveryPoolKeyAndProfile(t *testing.T) {
	doc := docText(t, "docs/stacks.md")
	poolKeys, stackKeys := map[string]bool{}, map[string]bool{}
	// A row's first cell may name several keys: "| `minNodes`, `maxNodes` |". Namespaced keys
	// ("gpucluster:vpcId", "aws:region") are stack keys, the others pool keys.
	for _, row := range regexp.MustCompile("(?m)^\\| (`[^|]+`) \\|").FindAllStringSubmatch(section(t, doc, "Stack files"), -1) {
		for _, k := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[1], -1) {
			if strings.Contains(k[1], ":") {
				stackKeys[k[1]] = true
			} else {
				poolKeys[k[1]] = true
			}
		}
	}
	actual := map[string]bool{}
	for _, k := range topology.PoolKeys() {
		actual[k] = true
	}
	compareSets(t, "pool key", actual, poolKeys)
	actual = map[string]bool{topology.KeyRegion: true}
	for _, k := range topology.ConfigKeys() {
		actual[k] = true
	}
	compareSets(t, "stack key", actual, stackKeys)

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

// TestReadmeQuickStartHasTheTwoCommands: one runs the main job, one runs the tests; .ci/run
// runs that same test command and nothing else, and the test command builds the harness before it
// runs go test over every package (no test builds a harness program inside its timeout).
func TestReadmeQuickStartHasTheTwoCommands(t *testing.T) {
	qs := section(t, readme(t), "Quick start")
	block := qs[strings.Index(qs, "```sh\n")+6:]
	block = block[:strings.Index(block, "```")]
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 || !strings.HasPrefix(cmds[0], "go run ./cmd/gpucluster ") || cmds[1] != "make test" {
		t.Fatalf("quick start commands %q", cmds)
	}
	args := strings.Fields(strings.TrimPrefix(cmds[0], "go run ./cmd/gpucluster "))
	if args[0] == "plan" { // write the bundle outside the source tree
		args = append(args, "--out", t.TempDir())
	}
	if code, _, errOut := runCLI(args...); code != 0 {
		t.Errorf("the README's first command fails: %s", errOut)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	var runs []string
	for _, line := range strings.Split(string(ci), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "set ") || strings.HasPrefix(line, "cd ") {
			continue
		}
		runs = append(runs, line)
	}
	if !slices.Equal(runs, cmds[1:]) {
		t.Errorf(".ci/run runs %q; want exactly the README's test command %q", runs, cmds[1])
	}
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	recipe := regexp.MustCompile(`(?m)^test:([^\n]*)\n((?:\t[^\n]*\n)*)`).FindStringSubmatch(string(makefile))
	if recipe == nil || !slices.Contains(strings.Fields(recipe[1]), "harness") ||
		!regexp.MustCompile(`^go test (-timeout \d+m )?\./\.\.\.$`).MatchString(strings.TrimSpace(recipe[2])) {
		t.Errorf("the Makefile's test target is %q; want the harness built first, then go test ./... (with at most a -timeout)", recipe)
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
		t.Errorf("the docs do not document %s(s): %v", what, missing)
	}
	if len(stale) > 0 {
		t.Errorf("the docs document %s(s) that do not exist: %v", what, stale)
	}
}

func TestReadmeNamesEveryDoctorJSONField(t *testing.T) {
	doc := section(t, docText(t, "docs/doctor.md"), "NCCL doctor: what did the job actually do?")
	for _, f := range jsonFields(doctor.Report{}) {
		parts := strings.Split(strings.ReplaceAll(f.path, "[]", ""), ".")
		if name := parts[len(parts)-1]; !strings.Contains(doc, "`"+name+"`") && !strings.Contains(doc, "`"+name+"[]`") {
			t.Errorf("docs/doctor.md does not name JSON field %s", f.path)
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestExitCodesAreOneTable: README.md and --help show the one table the commands return from.
func TestExitCodesAreOneTable(t *testing.T) {
	if !strings.Contains(docText(t, "docs/cli.md"), "## Exit codes\n\nEvery command exits with one of these (`gpucluster --help` prints the same table):\n\n"+exitCodeMarkdown()) {
		t.Errorf("docs/cli.md's exit-code table is not the commands' own; it should read:\n%s", exitCodeMarkdown())
	}
	var out strings.Builder
	if code := run([]string{"--help"}, &out, &out); code != exitOK || !strings.Contains(out.String(), exitCodeText()) {
		t.Errorf("--help exits %d and prints no exit-code table:\n%s", code, out.String())
	}
}
