package harness_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/gpucluster/gpucluster/test/harness"
)

// checkKubernetesProvider: the built pulumi-kubernetes provider serves, reports the version it
// was stamped with, and serves the schema its build generated (the go:embed files the module
// zip leaves out) with that version: a build that embedded a stale schema would say another
// version.
func checkKubernetesProvider(t *testing.T, bin string) {
	t.Helper()
	p, err := harness.StartPlugin(bin, nil)
	if err != nil {
		t.Error(err)
		return
	}
	defer p.Close()
	version, err := p.Version()
	if err != nil {
		t.Fatal(err)
	}
	if version != harness.KubernetesProviderVersion {
		t.Errorf("the kubernetes provider reports version %q; the harness stamps %q", version, harness.KubernetesProviderVersion)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := p.Client.GetSchema(ctx, &pulumirpc.GetSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Name, Version string
		Resources     map[string]json.RawMessage
	}
	if err := json.Unmarshal([]byte(resp.GetSchema()), &schema); err != nil {
		t.Fatal(err)
	}
	if schema.Name != "kubernetes" || schema.Version != harness.KubernetesProviderVersion || schema.Resources["kubernetes:helm.sh/v4:Chart"] == nil {
		t.Errorf("the kubernetes provider's schema is %s %s with %d resources (Chart v4: %v); want kubernetes %s with helm.sh/v4:Chart",
			schema.Name, schema.Version, len(schema.Resources), schema.Resources["kubernetes:helm.sh/v4:Chart"] != nil, harness.KubernetesProviderVersion)
	}
}
