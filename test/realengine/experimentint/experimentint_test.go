// Package experimentint interrupts `gpucluster experiment run` through the real engine: a Ctrl-C
// while both stacks come up, and both are destroyed. A test binary of its own: go test's alarm
// holds one experiment.
package experimentint

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// TestExperimentRunInterrupted: a Ctrl-C at the terminal (to the whole process group, the Pulumi
// CLI among it) while both stacks are coming up. The engine stops each update gracefully, the
// experiment destroys both stacks, leaving nothing in their state or at the aws double, and
// exits 1 saying it was interrupted.
func TestExperimentRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("the real engine: not under -short")
	}
	x := enginetest.NewExperiment(t, enginetest.FieldAB.Stacks...)
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	out, err := x.RunInterrupted(ctx, func() bool { return x.UpStarted(20 * time.Second) }, enginetest.FieldAB.Args...)
	t.Logf("experiment run:\n%s", out)
	if code := enginetest.ExitCode(err); code != 1 || !strings.Contains(out, "interrupted") {
		t.Fatalf("exit %d (%v), want 1 and the interruption said\n%s", code, err, x.Logs())
	}
	x.CheckDestroyed(out)
	x.CheckNothingLeft(ctx)
}
