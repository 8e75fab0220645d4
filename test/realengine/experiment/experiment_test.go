// Package experiment runs `gpucluster experiment run` through the real engine: the field's A/B,
// g6e over EFA against g6e over ENA, brought up side by side by the CLI itself, measured and
// destroyed. A test binary of its own: two benchmark stacks take most of go test's alarm.
package experiment

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// TestExperimentRunEFAAgainstENA: one command brings both stacks up with the real engine, verifies
// each, runs the all-reduce on each (kwok serving logs of our own: EFA about three times ENA's
// busbw), writes the comparison (EFA wins, by the ratio of the medians) and destroys both,
// leaving nothing in their state or at the aws double.
func TestExperimentRunEFAAgainstENA(t *testing.T) {
	if testing.Short() {
		t.Skip("the real engine: not under -short")
	}
	x := enginetest.NewExperiment(t, enginetest.FieldAB.Stacks...)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	out, err := x.Run(ctx, enginetest.FieldAB.Args...)
	if err != nil {
		t.Fatalf("experiment run: exit %d: %v\n%s\n%s", enginetest.ExitCode(err), err, out, x.Logs())
	}
	t.Logf("experiment run:\n%s", out)
	c := x.Comparison()
	if c.Winner != "g6e-efa" || !c.Whole || c.Factor < 2.5 || len(c.Stacks) != 2 {
		t.Errorf("comparison %+v", c)
	}
	for _, s := range c.Stacks {
		if len(s.Values) != 1 || s.CostUSD <= 0 {
			t.Errorf("%s: %+v", s.Stack, s)
		}
	}
	if !strings.Contains(out, "g6e-efa wins") {
		t.Errorf("output lacks the winner:\n%s", out)
	}
	x.CheckDestroyed(out)
	x.CheckNothingLeft(ctx)
}
