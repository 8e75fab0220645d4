package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/kueue"
)

func TestPlanDefaultsToTheDevStack(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b")
	code, stdout, stderr := runCLI("plan", "--out", out)
	if code != 0 || !strings.HasPrefix(stdout, "dev: ") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	for _, f := range []string{"plan.json", "REVIEW.md", "manifests/daemonset-kube-system-nvidia-device-plugin.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("bundle lacks %s", f)
		}
	}
}

func TestPlanAllWritesEveryStack(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI("plan", "--all", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	stacks, _ := filepath.Glob("../../stacks/Pulumi.*.yaml")
	reviews, _ := filepath.Glob(filepath.Join(out, "*", "REVIEW.md"))
	if len(reviews) != len(stacks) || strings.Count(stdout, "\n") != len(stacks) {
		t.Errorf("%d stacks, %d reviews\n%s", len(stacks), len(reviews), stdout)
	}
}

func TestPlanOfAnInvalidFileWritesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "Pulumi.bad.yaml")
	os.WriteFile(bad, []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: p5-efa, nodes: 0}]\n"), 0o644)
	out := filepath.Join(dir, "out")
	code, _, stderr := runCLI("plan", "--config", bad, "--out", out)
	if code != 1 || !strings.Contains(stderr, "is invalid: 1 error(s); nothing written") || !strings.Contains(stderr, ":3: gpucluster:pools[0].nodes: node count 0 is below 1") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("an invalid stack left a bundle behind")
	}
}

func TestPlanUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plan", "--stack", "nope"}, 2, "stacks: dev, g6e-efa"},
		{[]string{"plan", "--stack", "dev", "--config", "x"}, 2, "--stack and --config both name the stack file"},
		{[]string{"plan", "--all", "--stack", "dev"}, 2, "--all plans every stack"},
		{[]string{"plan", "extra"}, 2, "usage: gpucluster plan"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q", c.args, code, stderr)
		}
	}
}

// copyProject copies the project's Pulumi.yaml and stack files into a temporary checkout (with a
// .git of its own) and makes it the working directory: tests that exercise refusals, or write
// the default review/, never touch the real checkout.
func copyProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files, _ := filepath.Glob("../../stacks/Pulumi.*.yaml")
	for _, f := range append(files, "../../Pulumi.yaml") {
		rel, _ := filepath.Rel("../..", f)
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755)
		if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(root, ".git"), 0o755)
	os.WriteFile(filepath.Join(root, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	t.Chdir(root)
	return root
}

// The directories a new user tries first: each is refused before anything is written, with the
// path and the fix, and the files in it are untouched (in a copy of the checkout).
func TestPlanRefusesDirectoriesItDidNotWrite(t *testing.T) {
	root := copyProject(t)
	before := treeOf(t, root)
	file := filepath.Join(t.TempDir(), "mine.txt")
	os.WriteFile(file, []byte("keep\n"), 0o644)
	os.MkdirAll("stacks/sub", 0o755)
	t.Chdir("stacks/sub")
	for _, out := range []string{".", "..", "../..", "../../stacks", "../../.git", file} {
		code, stdout, stderr := runCLI("plan", "--out", out)
		if code != 1 || !strings.Contains(stderr, "will not write the bundle to "+out) || !strings.Contains(stderr, "fix:") || stdout != "" {
			t.Errorf("--out %s: exit %d\n%s%s", out, code, stdout, stderr)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep\n" {
		t.Error("the user's file was changed")
	}
	os.Remove(filepath.Join(root, "stacks/sub"))
	if after := treeOf(t, root); !maps.Equal(before, after) {
		t.Errorf("the checkout changed:\n%v\n%v", before, after)
	}
}

// treeOf is every file below dir and its content.
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(path)
			out[path] = string(b)
		}
		return nil
	})
	return out
}

// Bundles go to the project's review/, from wherever plan runs in it; one stack's bundle is never
// replaced by another's, and --all writes beside a bundle, never inside it.
func TestPlanOutputPaths(t *testing.T) {
	root := copyProject(t)
	t.Chdir("stacks")
	code, stdout, stderr := runCLI("plan", "--stack", "dev")
	if code != 0 || !strings.Contains(stdout, "→ ../review/dev/REVIEW.md") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(root, "review", "dev", "plan.json")); err != nil {
		t.Fatal("no bundle in the project's review/dev")
	}
	t.Chdir(root)
	if code, _, stderr := runCLI("plan", "--stack", "g6e-ena", "--out", "review/dev"); code != 1 || !strings.Contains(stderr, "it holds the bundle of stack dev, not g6e-ena") || !strings.Contains(stderr, "review/g6e-ena") {
		t.Errorf("another stack's bundle: exit %d %s", code, stderr)
	}
	code, _, stderr = runCLI("plan", "--all", "--out", "review/dev")
	if code != 1 || !strings.Contains(stderr, "it lies inside") || !strings.Contains(stderr, "the bundle of stack dev") {
		t.Errorf("--all inside a bundle: exit %d %s", code, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "review", "dev")); len(entries) != 4 {
		t.Errorf("review/dev changed: %v", entries)
	}
}

func TestPlanReplacesItsOwnBundle(t *testing.T) {
	out := filepath.Join(t.TempDir(), "b")
	for range 2 {
		if code, stdout, stderr := runCLI("plan", "--stack", "dev", "--out", out); code != 0 {
			t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
		}
	}
	os.WriteFile(filepath.Join(out, "notes.md"), []byte("mine\n"), 0o644)
	code, _, stderr := runCLI("plan", "--stack", "dev", "--out", out)
	if code != 1 || !strings.Contains(stderr, "notes.md") {
		t.Errorf("a bundle holding the user's notes was not refused: exit %d\n%s", code, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "notes.md")); string(b) != "mine\n" {
		t.Error("the user's notes were lost")
	}
}

func TestOfflineCommandsNameUnseenESCEnvironments(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "Pulumi.esc.yaml")
	os.WriteFile(f, []byte("environment: [platform/aws]\nconfig:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: dev}]\n"), 0o644)
	for _, args := range [][]string{{"validate", f}, {"plan", "--config", f, "--out", filepath.Join(dir, "b")}} {
		code, _, stderr := runCLI(args...)
		if code != 0 || !strings.Contains(stderr, "imports ESC environment(s) platform/aws") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "b", "REVIEW.md")); !strings.Contains(string(b), "imports ESC environment(s) platform/aws") {
		t.Error("REVIEW.md does not say the environment was not read")
	}
}

// TestPlanSaysWhichChartsAreNotRendered: a chart not rendered (here the renderer is off: TestMain)
// is named on standard error with why; the bundle is written either way, and the exit is 0, or 1
// with --require-charts.
func TestPlanSaysWhichChartsAreNotRendered(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
	}{{nil, 0}, {[]string{"--require-charts"}, 1}} {
		out := filepath.Join(t.TempDir(), "b")
		code, _, stderr := runCLI(append([]string{"plan", "--stack", "g6e-efa", "--out", out}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, "("+kueue.ChartRef+" "+kueue.ChartVersion+") not rendered") || !strings.Contains(stderr, "GPUCLUSTER_CHART_RENDERER=off") {
			t.Errorf("plan %v: exit %d, want %d, naming the Kueue chart and why:\n%s", c.args, code, c.code, stderr)
		}
		if _, err := os.Stat(filepath.Join(out, "REVIEW.md")); err != nil {
			t.Errorf("plan %v wrote no bundle: %v", c.args, err)
		}
	}
}
