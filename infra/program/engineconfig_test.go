package program

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/infra/offline"
)

// A stack file as a platform team writes it with an ESC environment: the region and the
// credentials come from the environment, not from the file.
const escStackFile = `environment:
  - platform/aws-us-east-2
config:
  gpucluster:pools:
    - name: gpu
      profile: g6e-efa
      nodes: 2
`

func writeStack(t *testing.T, stack, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "Pulumi."+stack+".yaml")
	if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// Under pulumi up the program uses what the engine passes, not what it reads from the file.
func TestRunEngineUsesTheEngineConfiguration(t *testing.T) {
	file := writeStack(t, "esc", escStackFile)
	engine := offline.NewEngine("esc").WithConfig(map[string]string{
		"aws:region":                   "us-east-2",                                      // from ESC
		"gpucluster:pools":             `[{"name":"gpu","nodes":3,"profile":"g6e-efa"}]`, // the engine's value wins over the file's 2
		"gpucluster:publicAccessCidrs": `["203.0.113.0/24"]`,                             // from ESC
	})
	outs, _, err := runCapturing(t, engine, RunEngine(file, func() time.Time { return testDay }))
	if err != nil {
		t.Fatal(err)
	}
	var ng, cluster map[string]any
	for _, r := range engine.Resources() {
		switch {
		case r.Type == "aws:eks/nodeGroup:NodeGroup" && r.Name == "esc-gpu":
			ng = r.Input("scalingConfig").(map[string]any)
		case r.Type == "eks:index:Cluster":
			cluster = map[string]any{"cidrs": r.Input("publicAccessCidrs")}
		}
	}
	if ng == nil || ng["desiredSize"] != 3.0 || ng["maxSize"] != 3.0 {
		t.Errorf("node group scaling %v: the engine said 3 nodes", ng)
	}
	if cidrs, _ := cluster["cidrs"].([]any); len(cidrs) != 1 || cidrs[0] != "203.0.113.0/24" {
		t.Errorf("public access CIDRs %v", cluster["cidrs"])
	}
	for k, o := range outs {
		if pulumi.IsSecret(o) != (k == "kubeconfig") {
			t.Errorf("%s secret %v with no secret configuration", k, pulumi.IsSecret(o))
		}
	}
	// The offline reading of the same file cannot see ESC: it says so and stops.
	err = offline.NewEngine("esc").Run(Run(file, testDay))
	if err == nil || !strings.Contains(err.Error(), "imports ESC environment(s) platform/aws-us-east-2") {
		t.Errorf("offline run of an ESC stack: %v", err)
	}
}

func TestRunEngineKeepsSecretsSecret(t *testing.T) {
	file := writeStack(t, "sec", escStackFile+"  gpucluster:trainingImage:\n    secure: v1:ciphertext\n")
	config := map[string]string{
		"aws:region":               "us-east-2",
		"gpucluster:pools":         `[{"name":"gpu","nodes":2,"profile":"g6e-efa"}]`,
		"gpucluster:trainingImage": "registry.internal.example/team/trainer:v7",
	}
	engine := offline.NewEngine("sec").WithConfig(config, "gpucluster:trainingImage")
	outs, _, err := runCapturing(t, engine, RunEngine(file, func() time.Time { return testDay }))
	if err != nil {
		t.Fatal(err)
	}
	for k, o := range outs {
		if !pulumi.IsSecret(o) {
			t.Errorf("export %s is not secret although the configuration holds a secret", k)
		}
	}
	// A bad secret value is refused without being shown, and nothing is registered.
	config["gpucluster:trainingImage"] = "bad image with spaces-s3cr3t"
	engine = offline.NewEngine("sec").WithConfig(config, "gpucluster:trainingImage")
	err = engine.Run(RunEngine(file, func() time.Time { return testDay }))
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "Pulumi.sec.yaml:9: gpucluster:trainingImage") ||
		!strings.Contains(err.Error(), "is a secret") {
		t.Errorf("bad secret: %v", err)
	}
	if n := len(engine.Resources()); n != 0 {
		t.Errorf("%d resources registered for an invalid configuration", n)
	}
}
