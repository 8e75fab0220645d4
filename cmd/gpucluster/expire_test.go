package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const expireStack = `# Benchmark stack: comments and order stay as written.
config:
  aws:region: us-east-1   # the team's region
  gpucluster:pools:
    - name: gpu
      profile: dev
`

func TestExpireWritesOneLineAndNothingElse(t *testing.T) {
	defer func(n func() time.Time) { now = n }(now)
	now = func() time.Time { return time.Date(2026, 11, 22, 9, 30, 20, 0, time.UTC) }
	f := filepath.Join(t.TempDir(), "Pulumi.bench.yaml")
	os.WriteFile(f, []byte(expireStack), 0o640)

	code, stdout, stderr := runCLI("expire", "--config", f, "--in", "8h")
	if code != 0 || !strings.Contains(stdout, `gpucluster:expiresAt: "2026-11-22T17:31:00Z"`) {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	got, _ := os.ReadFile(f)
	want := strings.Replace(expireStack, "config:\n", "config:\n  gpucluster:expiresAt: \"2026-11-22T17:31:00Z\"\n", 1)
	if string(got) != want {
		t.Errorf("file now:\n%s\nwant:\n%s", got, want)
	}
	if info, _ := os.Stat(f); info.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", info.Mode().Perm())
	}
	// Again: the same line is rewritten, its comment kept.
	os.WriteFile(f, []byte(strings.Replace(want, `"2026-11-22T17:31:00Z"`, `"2026-11-22T17:31:00Z" # demo day`, 1)), 0o640)
	if code, _, stderr := runCLI("expire", "--config", f, "--in", "90m"); code != 0 {
		t.Fatal(stderr)
	}
	got, _ = os.ReadFile(f)
	if !strings.Contains(string(got), "  gpucluster:expiresAt: \"2026-11-22T11:01:00Z\" # demo day\n") || strings.Count(string(got), "expiresAt") != 1 {
		t.Errorf("file now:\n%s", got)
	}
}

func TestExpireRefusesWithoutTouchingTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "Pulumi.bad.yaml")
	content := "config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: nope}]\n"
	os.WriteFile(bad, []byte(content), 0o644)
	if code, _, stderr := runCLI("expire", "--config", bad, "--in", "8h"); code != 1 || !strings.Contains(stderr, "nothing changed") {
		t.Errorf("invalid stack: exit %d %s", code, stderr)
	}
	if got, _ := os.ReadFile(bad); string(got) != content {
		t.Error("the invalid file was changed")
	}
	for _, args := range [][]string{{"expire", "--in", "8h"}, {"expire", "--config", bad}, {"expire", "--config", bad, "--in", "-1h"}} {
		if code, _, stderr := runCLI(args...); code != 2 || !strings.Contains(stderr, "usage: gpucluster expire") {
			t.Errorf("%v: exit %d %s", args, code, stderr)
		}
	}
}
