package cluster

import (
	"context"
	"os"
	"regexp"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestAWSProviderVersionIsGoMods: the version the transform gives pulumi-eks's EKS cluster is
// the pulumi-aws SDK of go.mod, which stamps it on the program's own resources.
func TestAWSProviderVersionIsGoMods(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/pulumi/pulumi-aws/sdk/v6 v(\S+)$`).FindSubmatch(b)
	if m == nil || string(m[1]) != AWSProviderVersion {
		t.Errorf("go.mod requires pulumi-aws %q, AWSProviderVersion is %s", m, AWSProviderVersion)
	}
}

// TestUpgradePolicyTransform: pulumi-eks's EKS cluster child gets the upgrade policy and the
// program's aws provider version, keeping its inputs and other options; no other child is
// touched.
func TestUpgradePolicyTransform(t *testing.T) {
	transform := withUpgradePolicy("STANDARD")
	args := &pulumi.ResourceTransformArgs{Custom: true, Type: "aws:eks/cluster:Cluster", Name: "gpu-eksCluster",
		Props: pulumi.Map{"name": pulumi.String("gpu"), "roleArn": pulumi.String("arn:aws:iam::1:role/x")},
		Opts:  pulumi.ResourceOptions{Version: "6.45.0", Protect: true}}
	got := transform(context.Background(), args)
	if got == nil {
		t.Fatal("the EKS cluster child was not transformed")
	}
	if got.Opts.Version != "6.83.4" || !got.Opts.Protect {
		t.Errorf("options: version %q protect %v, want 6.83.4 (go.mod's pulumi-aws) and the child's own protect", got.Opts.Version, got.Opts.Protect)
	}
	policy, ok := got.Props["upgradePolicy"].(pulumi.Map)
	if !ok || policy["supportType"] != pulumi.String("STANDARD") {
		t.Errorf("upgradePolicy %#v, want {supportType: STANDARD}", got.Props["upgradePolicy"])
	}
	if got.Props["name"] != pulumi.String("gpu") || got.Props["roleArn"] != pulumi.String("arn:aws:iam::1:role/x") || len(got.Props) != 3 {
		t.Errorf("the child's own inputs changed: %#v", got.Props)
	}
	if _, set := args.Props["upgradePolicy"]; set {
		t.Error("the transform changed the child's original inputs in place")
	}
	for _, typ := range []string{"aws:iam/role:Role", "aws:ec2/securityGroup:SecurityGroup", "aws:eks/accessEntry:AccessEntry"} {
		if r := transform(context.Background(), &pulumi.ResourceTransformArgs{Type: typ, Opts: pulumi.ResourceOptions{Version: "6.45.0"}}); r != nil {
			t.Errorf("%s was transformed: %+v", typ, r)
		}
	}
	for typ, want := range map[string]string{"aws:eks/cluster:Cluster": "6.83.4", "aws:iam/role:Role": "6.45.0"} {
		if got := PulumiEKSChildAWSProviderVersion(typ); got != want {
			t.Errorf("%s is served by aws %s, want %s", typ, got, want)
		}
	}
}
