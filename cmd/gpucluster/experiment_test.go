package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/internal/experiment"
)

const gQuotaFlag = "Running On-Demand G and VT instances=384"

// experimentAt plans at a set instant: the expiry and the prices depend on the day.
func experimentAt(t *testing.T) {
	t.Helper()
	was := now
	t.Cleanup(func() { now = was })
	now = func() time.Time { return time.Date(2026, 12, 7, 10, 30, 15, 0, time.UTC) }
}

// The field's A/B, g6e over EFA against g6e over ENA: both planned, their bundles written, and
// refused until the user says the account allows their vCPUs together; then clean.
func TestExperimentPlanOfTheFieldsAB(t *testing.T) {
	experimentAt(t)
	out := t.TempDir()
	code, stdout, stderr := runCLI("experiment", "plan", "--stacks", "g6e-efa,g6e-ena", "--out", out)
	if code != 1 || !strings.Contains(stderr, "refused: Running On-Demand G and VT instances in us-west-2: the stacks need 384 vCPUs side by side") ||
		!strings.Contains(stderr, "--quota '"+gQuotaFlag+"'") || !strings.Contains(stdout, "must not start") {
		t.Fatalf("without --quota: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, s := range []string{"g6e-efa", "g6e-ena"} {
		if _, err := os.Stat(filepath.Join(out, s, "REVIEW.md")); err != nil {
			t.Errorf("no review bundle for %s: %v", s, err)
		}
	}
	code, stdout, stderr = runCLI("experiment", "plan", "--stacks", "g6e-efa, g6e-ena", "--out", out, "--quota", gQuotaFlag, "--max-duration", "2h", "-o", "json")
	if code != 0 || strings.Contains(stderr, "refused") {
		t.Fatalf("with the account's quota: exit %d\n%s", code, stderr)
	}
	var p experiment.Plan
	if err := json.Unmarshal([]byte(stdout), &p); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	end := time.Date(2026, 12, 7, 12, 31, 0, 0, time.UTC)
	if len(p.Stacks) != 2 || !p.Until.Equal(end) || !p.Stacks[1].ExpiresBy.Equal(end) || p.USDAtMost <= 0 || len(p.Quotas) != 1 || p.Quotas[0].Account != 384 {
		t.Errorf("plan %+v", p)
	}
}

// A stack whose plan fails stops the experiment; the other is still planned and said.
func TestExperimentPlanRefusesAStackThatDoesNotPlan(t *testing.T) {
	experimentAt(t)
	dir := t.TempDir()
	stacks := filepath.Join(dir, "stacks")
	if err := os.MkdirAll(stacks, 0o755); err != nil {
		t.Fatal(err)
	}
	project, err := os.ReadFile("../../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	good, err := os.ReadFile("../../stacks/Pulumi.g6e-efa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(good), "g6e-efa", "g6e-bogus", 1)
	for name, data := range map[string]string{"Pulumi.yaml": string(project), "stacks/Pulumi.g6e-efa.yaml": string(good), "stacks/Pulumi.broken.yaml": bad} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	code, stdout, stderr := runCLI("experiment", "plan", "--stacks", "g6e-efa,broken", "--out", filepath.Join(dir, "out"))
	if code != 1 || !strings.Contains(stderr, "Pulumi.broken.yaml is invalid") || !strings.Contains(stderr, "1 of 2 stacks could not be planned") || stdout != "" {
		t.Fatalf("exit %d\nstdout %q\n%s", code, stdout, stderr)
	}
}

// What the command line gets wrong is said before any stack is planned (exit 2).
func TestExperimentUsage(t *testing.T) {
	experimentAt(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"experiment"}, "give a subcommand: plan"},
		{[]string{"experiment", "pln"}, `no subcommand "pln"`},
		{[]string{"experiment", "plan"}, "name two stacks or more to compare: --stacks g6e-efa,g6e-ena"},
		{[]string{"experiment", "plan", "--stacks", "g6e-efa"}, "name two stacks or more"},
		{[]string{"experiment", "plan", "--stacks", "g6e-efa,g6e-efa"}, "--stacks names g6e-efa twice"},
		{[]string{"experiment", "plan", "--stacks", "g6e-efa,g6e-enaa"}, `no stack "g6e-enaa"`},
		{[]string{"experiment", "plan", "--stacks", "g6e-efa,g6e-ena", "--max-duration", "0h"}, "--max-duration 0h"},
		{[]string{"experiment", "plan", "--stacks", "g6e-efa,g6e-ena", "--quota", "P=many"}, "write the quota's name and its vCPUs"},
		{[]string{"experiment", "plan", "--stacks", "g6e-efa,g6e-ena", "--quota", "Running On-Demand P instances=96"}, "no stack of the experiment needs that quota; they need: Running On-Demand G and VT instances"},
		{[]string{"experiment", "plan", "g6e-efa,g6e-ena"}, "--stacks g6e-efa,g6e-ena"},
	} {
		out := t.TempDir()
		args := c.args
		if len(args) > 1 && !strings.Contains(strings.Join(args, " "), "--out") {
			args = append(args, "--out", out)
		}
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
		if written, _ := os.ReadDir(out); len(written) > 0 {
			t.Errorf("%v: refused, yet wrote %d bundle(s)", c.args, len(written))
		}
	}
}
