package awsdouble

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/gpucluster/gpucluster/components/cluster"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble/schema"
	"github.com/gpucluster/gpucluster/test/realengine/record"
)

// double is the double as the engine starts it at one version, recording into a file.
func double(t *testing.T, version string) (*Provider, string) {
	t.Helper()
	sdk, err := schema.SDKDir(version)
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(t.TempDir(), "calls.jsonl")
	t.Setenv(EnvVersion, version)
	t.Setenv(EnvSDK, sdk)
	t.Setenv(record.EnvFile, rec)
	p, err := New()
	if err != nil {
		t.Fatal(err)
	}
	return p, rec
}

// TestCheckAnswersAsTheProviderVersion: the EKS cluster pulumi-eks registers with the program's
// upgrade policy is refused by the double at pulumi-eks's bundled version, as that version's
// bridge refuses it, with the failure recorded under that version; the program's version accepts
// it and records nothing.
func TestCheckAnswersAsTheProviderVersion(t *testing.T) {
	urn := "urn:pulumi:dev::gpucluster::gpucluster:index:Cluster$eks:index:Cluster$aws:eks/cluster:Cluster::dev-eksCluster"
	inputs, err := marshal(resource.NewPropertyMapFromMap(map[string]any{
		"roleArn": "arn:aws:iam::123456789012:role/dev-eksRole", "vpcConfig": map[string]any{"subnetIds": []any{"subnet-1"}},
		"upgradePolicy": map[string]any{"supportType": "STANDARD"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	p, rec := double(t, cluster.PulumiEKSAWSProviderVersion)
	resp, err := p.Check(context.Background(), &pulumirpc.CheckRequest{Urn: urn, News: inputs})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Failures) != 1 || resp.Failures[0].Reason != "Invalid or unknown key. Examine values at 'dev-eksCluster.upgradePolicy'." {
		t.Errorf("at %s: failures %v", cluster.PulumiEKSAWSProviderVersion, resp.Failures)
	}
	calls, err := record.Read(rec)
	if err != nil || len(calls) != 1 || calls[0].Op != "check" || calls[0].Version != cluster.PulumiEKSAWSProviderVersion || !strings.Contains(calls[0].Error, "upgradePolicy") {
		t.Errorf("the record: %+v (%v)", calls, err)
	}

	p, rec = double(t, cluster.AWSProviderVersion)
	if resp, err = p.Check(context.Background(), &pulumirpc.CheckRequest{Urn: urn, News: inputs}); err != nil || len(resp.Failures) != 0 {
		t.Errorf("at %s: %v, %v", cluster.AWSProviderVersion, resp.GetFailures(), err)
	}
	if b, _ := os.ReadFile(rec); len(b) != 0 {
		t.Errorf("an accepted check was recorded: %s", b)
	}
	if _, err := p.Check(context.Background(), &pulumirpc.CheckRequest{Urn: strings.Replace(urn, "aws:eks/cluster:Cluster", "aws:eks/clusterr:Clusterr", 1), News: inputs}); err == nil {
		t.Error("a resource type the provider does not have was accepted")
	}
}
