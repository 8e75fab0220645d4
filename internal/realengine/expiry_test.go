package realengine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/realengine"
	"github.com/gpucluster/gpucluster/internal/realengine/awsdouble"
	"github.com/gpucluster/gpucluster/internal/realengine/enginetest"
	"github.com/gpucluster/gpucluster/internal/realengine/record"
)

// TestRealEngineExtendingTheExpiryRestoresThePool: the expiry's schedule scales the GPU node group
// to zero outside Pulumi (the aws double's live state). A `pulumi up` after the expiry keeps it
// there (nothing updates the group); an up after `gpucluster expire` extends it restores the
// group's size. Both rest on the refresh every up does (Pulumi.yaml options.refresh: always):
// without it, the engine would compare the program with the state, not with AWS.
func TestRealEngineExtendingTheExpiryRestoresThePool(t *testing.T) {
	t.Parallel()
	const name = "dev"
	spec, err := topology.LoadStack(filepath.Join(enginetest.ProjectDir, "stacks", "Pulumi."+name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := realengine.NewEnv(t.TempDir(), enginetest.ProjectDir, enginetest.NeedTools(t), enginetest.StartCluster(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Close)
	live := filepath.Join(t.TempDir(), "live.json")
	env.SetEnv(awsdouble.EnvLive, live)
	clock := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	st, err := env.Stack(ctx, name, program.RunEngineAt(env.StackFile(name), func() time.Time { return clock }))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	up := func(what string) []record.Call {
		t.Helper()
		before, err := env.Calls()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Up(ctx, optup.ProgressStreams(&log)); err != nil {
			t.Fatalf("%s: %v\n%s", what, err, enginetest.Tail(log.String(), 60))
		}
		after, err := env.Calls()
		if err != nil {
			t.Fatal(err)
		}
		return after[len(before):]
	}
	expire := func(in string) {
		t.Helper()
		if out, err := env.Run(ctx, nil, "gpucluster", "expire", "--config", env.StackFile(name), "--in", in); err != nil {
			t.Fatalf("gpucluster expire --in %s: %v\n%s", in, err, out)
		}
	}
	nodeGroup := func(calls []record.Call, op string) *record.Call {
		for i, c := range calls {
			if c.Op == op && c.Type == "aws:eks/nodeGroup:NodeGroup" && !strings.HasSuffix(c.URN, "-system") {
				return &calls[i]
			}
		}
		return nil
	}

	expire("1h")
	created := nodeGroup(up("pulumi up"), "create")
	if created == nil {
		t.Fatal("no GPU node group was created")
	}
	want := created.Inputs["scalingConfig"].(map[string]any)

	// The schedule fires: EKS scales the group to zero, keeping its maximum.
	stopped := map[string]any{"minSize": 0, "desiredSize": 0, "maxSize": want["maxSize"]}
	b, _ := json.Marshal(map[string]any{created.URN: map[string]any{"scalingConfig": stopped}})
	if err := os.WriteFile(live, b, 0o644); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(2 * time.Hour)
	calls := up("pulumi up after the expiry")
	if nodeGroup(calls, "read") == nil {
		t.Error("pulumi up did not read the node group first (no refresh): it cannot see what the expiry changed")
	}
	if u := nodeGroup(calls, "update"); u != nil {
		t.Errorf("pulumi up after the expiry changed the stopped node group: %v", u.Inputs["scalingConfig"])
	}

	// Extending the expiry restores the group's size.
	expire("8h")
	u := nodeGroup(up("pulumi up after gpucluster expire"), "update")
	if u == nil {
		t.Fatalf("extending the expiry did not restore the node group\n%s", enginetest.Tail(log.String(), 40))
	}
	if got := u.Inputs["scalingConfig"].(map[string]any); got["desiredSize"] != want["desiredSize"] || got["minSize"] != want["minSize"] {
		t.Errorf("restored scaling %v, want %v", got, want)
	}
}
