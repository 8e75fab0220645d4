// Package experimentfail runs `gpucluster experiment run` through the real engine with one stack
// whose up fails: the other is still measured, and both are destroyed. A test binary of its own:
// go test's alarm holds one experiment.
package experimentfail

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

func TestMain(m *testing.M) { enginetest.Main(m) }

// noCapacity is what EKS says of a managed node group EC2 could not launch instances for: the
// shape of an AsgInstanceLaunchFailures health issue with EC2's InsufficientInstanceCapacity
// (Amazon EKS API reference, Issue codes; Amazon EC2 error codes), own words for the rest.
const noCapacity = "creating EKS Node Group (g6e-ena:g6e-ena-gpu): unexpected state 'CREATE_FAILED', wanted target 'ACTIVE'. last error: AsgInstanceLaunchFailures: Could not launch On-Demand Instances. InsufficientInstanceCapacity - We currently do not have sufficient g6e.12xlarge capacity in the Availability Zone you requested (us-west-2a)."

// TestExperimentRunWithAStackThatFailsItsUp: AWS refuses g6e-ena's GPU node group. g6e-efa is
// still brought up, verified and measured; the comparison says g6e-ena failed at its up, and
// why, with no winner; both stacks are destroyed, nothing left; the exit code says the
// comparison is not whole.
func TestExperimentRunWithAStackThatFailsItsUp(t *testing.T) {
	if testing.Short() {
		t.Skip("the real engine: not under -short")
	}
	x := enginetest.NewExperiment(t, enginetest.FieldAB.Stacks...)
	refuse, _ := json.Marshal(map[string]string{"aws:eks/nodeGroup:NodeGroup::" + topology.PoolResourceName("g6e-ena", "gpu"): noCapacity})
	x.Env.SetEnv(awsdouble.EnvRefuse, string(refuse))
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	out, err := x.Run(ctx, enginetest.FieldAB.Args...)
	if code := enginetest.ExitCode(err); code != 1 {
		t.Fatalf("experiment run: exit %d, want 1 (the comparison is not whole): %v\n%s\n%s", code, err, out, x.Logs())
	}
	t.Logf("experiment run:\n%s", out)
	c := x.Comparison()
	if c.Whole || c.Winner != "" || len(c.Stacks) != 2 {
		t.Fatalf("comparison %+v", c)
	}
	efa, ena := c.Stacks[0], c.Stacks[1]
	if len(efa.Values) != 1 || efa.Failed != "" {
		t.Errorf("g6e-efa was not measured: %+v", efa)
	}
	if !strings.HasPrefix(ena.Failed, "up: ") || !strings.Contains(ena.Failed, "InsufficientInstanceCapacity") {
		t.Errorf("g6e-ena: failed %q; want its up, with AWS's reason", ena.Failed)
	}
	x.CheckDestroyed(out)
	x.CheckNothingLeft(ctx)
}
