package program

import (
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
)

// TestPulumiProjectFile validates Pulumi.yaml against Pulumi's own project schema and loader, and
// holds its typed config block equal to the keys gpucluster reads.
func TestPulumiProjectFile(t *testing.T) {
	raw, err := os.ReadFile("../../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	// LoadProject alone does not apply the JSON schema to config declarations; this does.
	if err := workspace.ValidateProject(doc); err != nil {
		t.Fatalf("Pulumi.yaml fails Pulumi's project schema: %v", err)
	}
	proj, err := workspace.LoadProject("../../Pulumi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if proj.Name.String() != offline.Project || proj.Runtime.Name() != "go" || proj.Main != "infra" || proj.StackConfigDir != "stacks" {
		t.Errorf("project %s runtime %s main %s stackConfigDir %s", proj.Name, proj.Runtime.Name(), proj.Main, proj.StackConfigDir)
	}
	if target, _ := proj.Runtime.Options()["buildTarget"].(string); target == "" {
		t.Error("no buildTarget: every pulumi up would relink the program")
	}
	var declared []string
	for k, v := range proj.Config {
		declared = append(declared, topology.ConfigNamespace+":"+k)
		if v.Type == nil || v.Description == "" {
			t.Errorf("config %s needs a type and a description", k)
		}
		if v.Default != nil || v.Value != nil {
			t.Errorf("config %s has a Pulumi default; defaults live in the topology core only", k)
		}
	}
	// The CLI requires every declared key without a default: declaring an optional key would
	// make every stack that leaves it out fail before the program runs.
	required := topology.RequiredConfigKeys()
	sort.Strings(declared)
	sort.Strings(required)
	if strings.Join(declared, " ") != strings.Join(required, " ") {
		t.Errorf("Pulumi.yaml declares %v, but the keys every stack must set are %v", declared, required)
	}
}

// TestRequiredConfigKeysAreRequired: a stack that leaves out a key the project declares is
// refused by the core too, naming that key, so Pulumi's requirement and the core's agree.
func TestRequiredConfigKeysAreRequired(t *testing.T) {
	for _, k := range topology.RequiredConfigKeys() {
		data := []byte("config:\n  aws:region: us-west-2\n")
		_, err := topology.ParseStack("Pulumi.required.yaml", data)
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("a stack without %s: got %v, want an error naming the key", k, err)
		}
	}
}
