package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"plan", "--stack", "nope"}, 1, "stacks: dev, g6e-efa"},
		{[]string{"plan", "--stack", "dev", "--config", "x"}, 2, "usage: gpucluster plan"},
		{[]string{"plan", "--all", "--stack", "dev"}, 2, "usage: gpucluster plan"},
		{[]string{"plan", "extra"}, 2, "usage: gpucluster plan"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d %q", c.args, code, stderr)
		}
	}
}

// The directories a new user tries first: each is refused before anything is written, with the
// path and the fix, and the files in it are untouched.
func TestPlanRefusesDirectoriesItDidNotWrite(t *testing.T) {
	file := filepath.Join(t.TempDir(), "mine.txt")
	os.WriteFile(file, []byte("keep\n"), 0o644)
	for _, out := range []string{".", "..", "../..", "../../stacks", "../../.git", file} {
		code, stdout, stderr := runCLI("plan", "--out", out)
		if code != 1 || !strings.Contains(stderr, "will not write the bundle to "+out) || !strings.Contains(stderr, "fix:") || stdout != "" {
			t.Errorf("--out %s: exit %d\n%s%s", out, code, stdout, stderr)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep\n" {
		t.Error("the user's file was changed")
	}
	if _, err := os.Stat("../../stacks/Pulumi.dev.yaml"); err != nil {
		t.Fatal("the stack file is gone")
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
