package realengine_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/gpucluster/gpucluster/test/realengine/enginetest"
)

// TestRealEngineSecretConfig: a gpucluster key set with `pulumi config set --secret` is stored
// encrypted in the stack file by the real CLI, reaches the program decrypted, and makes every
// stack output secret.
func TestRealEngineSecretConfig(t *testing.T) {
	t.Parallel()
	d := enginetest.Deploy(t, "dev")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if _, err := d.Env.CLI(ctx, "config", "set", "--secret", "gpucluster:owner", "ml-platform", "-s", "dev"); err != nil {
		d.Fail("pulumi config set --secret", err)
	}
	file, err := os.ReadFile(d.Env.StackFile("dev"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(file), "ml-platform") || !strings.Contains(string(file), "secure:") {
		t.Fatalf("the CLI did not encrypt the owner in the stack file:\n%s", file)
	}
	if _, err := d.Stack.Up(ctx, optup.ProgressStreams(&d.Log)); err != nil {
		d.Fail("pulumi up with a secret owner", err)
	}
	tagged := 0
	for _, c := range d.Calls() {
		if c.Provider == "aws" && c.Op == "create" && strings.Contains(jsonText(c.Inputs["tags"]), "ml-platform") {
			tagged++
		}
	}
	if tagged == 0 {
		t.Error("no AWS resource was tagged with the decrypted owner")
	}
	outs, err := d.Stack.Outputs(ctx)
	if err != nil {
		d.Fail("pulumi stack output", err)
	}
	for k, v := range outs {
		if !v.Secret {
			t.Errorf("output %s is not secret, though the configuration has a secret", k)
		}
	}
	if _, err := d.Stack.Destroy(ctx, optdestroy.ProgressStreams(&d.Log)); err != nil {
		d.Fail("pulumi destroy", err)
	}
}

// TestRealEngineInterruptedUp: an up killed halfway (the CLI process ended while the engine is
// creating) and run again converges: the second up completes, a third changes nothing, and
// destroy leaves nothing, including anything the killed run created.
func TestRealEngineInterruptedUp(t *testing.T) {
	t.Parallel()
	d := enginetest.Deploy(t, "dev")
	killed, kill := context.WithCancel(context.Background())
	go func() {
		for killed.Err() == nil {
			creates := 0
			for _, c := range d.Calls() {
				if c.Op == "create" {
					creates++
				}
			}
			if creates >= 20 {
				kill()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if _, err := d.Stack.Up(killed, optup.ProgressStreams(&d.Log)); err == nil {
		t.Fatal("the up meant to be killed completed first: kill it earlier")
	}
	kill()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if _, err := d.Stack.Up(ctx, optup.ProgressStreams(&d.Log)); err != nil {
		d.Fail("pulumi up after an interrupted up", err)
	}
	if _, err := d.Stack.Up(ctx, optup.ExpectNoChanges(), optup.ProgressStreams(&d.Log)); err != nil {
		d.Fail("a third pulumi up changed something", err)
	}
	deletedWith := d.DeletedWith(ctx)
	objects := d.KubernetesObjects(ctx)
	if _, err := d.Stack.Destroy(ctx, optdestroy.ProgressStreams(&d.Log)); err != nil {
		d.Fail("pulumi destroy", err)
	}
	d.CheckNothingLeft(ctx, d.Calls(), deletedWith, objects)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
