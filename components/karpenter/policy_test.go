package karpenter

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// notGranted are the methods of Karpenter's AWS client interfaces that the controller policy
// leaves out, each with why (the v1.14 reference CloudFormation grants none of the first three;
// v1.15's grants ec2:RebootInstances for its reboot gate).
var notGranted = map[string]string{
	"sqs:SendMessage":         "only Karpenter's end-to-end tests send to the queue (pkg/providers/sqs); EventBridge delivers in a cluster",
	"iam:GetRole":             "declared in pkg/aws/sdk.go, called by no controller code",
	"timestream:WriteRecords": "Karpenter's own test metrics",
	"ec2:RebootInstances": "called only with the RebootForRepair AWS feature gate (pkg/providers/instance Reboot), which the chart values keep off: " +
		"a pool's repair replaces its node",
}

// notAnAPICall are granted actions that are authorizations, not API calls Karpenter makes.
var notAnAPICall = map[string]string{
	"iam:PassRole": "RunInstances and CreateFleet pass the node role through its instance profile",
}

// TestPolicyCoversEveryAPIKarpenterCalls diffs the controller policy against the AWS APIs the
// pinned controller calls: the methods of its client interfaces (pkg/aws/sdk.go of the
// karpenter-provider-aws module in the module cache). A release that calls a new API (v1.12's
// ec2:DescribeInstanceStatus) fails here instead of failing at run time with AccessDenied.
func TestPolicyCoversEveryAPIKarpenterCalls(t *testing.T) {
	mod, err := kubeapi.KarpenterModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(mod, "pkg", "aws", "sdk.go"))
	if err != nil {
		t.Fatal(err)
	}
	prefix := map[string]string{"EC2API": "ec2", "IAMAPI": "iam", "EKSAPI": "eks", "PricingAPI": "pricing", "SSMAPI": "ssm",
		"SQSAPI": "sqs", "ARCZonalShiftAPI": "arc-zonal-shift", "TimestreamWriteAPI": "timestream"}
	iface := regexp.MustCompile(`(?m)^type (\w+) interface \{$`)
	method := regexp.MustCompile(`(?m)^\t(\w+)\(`)
	called := map[string]bool{}
	locs := iface.FindAllSubmatchIndex(src, -1)
	for i, loc := range locs {
		name := string(src[loc[2]:loc[3]])
		svc, ok := prefix[name]
		if !ok {
			t.Fatalf("sdk.go has an interface %s this test does not know: which service is it?", name)
		}
		end := len(src)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		for _, m := range method.FindAllSubmatch(src[loc[1]:end], -1) {
			called[svc+":"+string(m[1])] = true
		}
	}
	if len(called) < 30 {
		t.Fatalf("read only %d API methods from %s: has the file's shape changed?", len(called), filepath.Join(mod, "pkg/aws/sdk.go"))
	}
	granted := map[string]bool{}
	for _, st := range controllerPolicy("aws", "us-west-2", "c", "arn:aws:sqs:us-west-2:111122223333:q", "arn:aws:iam::111122223333:role/n").Statement {
		for _, a := range st.Action {
			granted[a] = true
		}
	}
	var missing, extra []string
	for a := range called {
		if !granted[a] && notGranted[a] == "" {
			missing = append(missing, a)
		}
		if granted[a] && notGranted[a] != "" {
			t.Errorf("%s is granted but listed as not granted (%s)", a, notGranted[a])
		}
	}
	for a := range granted {
		if !called[a] && notAnAPICall[a] == "" {
			extra = append(extra, a)
		}
	}
	for a := range notGranted {
		if !called[a] {
			t.Errorf("%s is listed as not granted but Karpenter no longer declares it: drop it from notGranted", a)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 {
		t.Errorf("Karpenter calls APIs the controller policy does not grant: %v", missing)
	}
	if len(extra) > 0 {
		t.Errorf("the controller policy grants actions Karpenter never calls: %v", extra)
	}
}
