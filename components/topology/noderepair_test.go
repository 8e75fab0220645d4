package topology

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestNodeRepairFollowsTheStack: on by default where the stack runs no benchmarks, off where it
// does (a replaced node would spoil a run), the pool's key over both; the stack's Karpenter
// pools share one switch, the controller's feature gate, and each keeps its own by its budget.
func TestNodeRepairFollowsTheStack(t *testing.T) {
	load := func(benchmarks bool, pools string) (StackSpec, error) {
		data := "config:\n  aws:region: us-east-1\n"
		if benchmarks {
			data += "  gpucluster:benchmarks: {enabled: true}\n"
		}
		st, err := ParseStack("r.yaml", []byte(data+"  gpucluster:pools:\n"+pools))
		if err != nil {
			return StackSpec{}, err
		}
		return DeriveStack(st, planDay)
	}
	for _, c := range []struct {
		name       string
		benchmarks bool
		pools      string
		want       []bool
		reason     string
	}{
		{"long-lived", false, "    - {name: a, profile: p5-efa}\n", []bool{true}, "on by default"},
		{"benchmarks", true, "    - {name: a, profile: p5-efa}\n", []bool{false}, "off in a benchmark stack"},
		{"benchmarks, the pool asks", true, "    - {name: a, profile: p5-efa, nodeRepair: true}\n", []bool{true}, "nodeRepair: true"},
		{"long-lived, the pool declines", false, "    - {name: a, profile: p5-efa, nodeRepair: false}\n    - {name: b, profile: dev}\n", []bool{false, true}, "a failed node stays"},
		// The agent's chart runs DCGM on amd64 only: on arm64 a failed GPU triggers no repair.
		{"long-lived amd64", false, "    - {name: a, profile: p5-efa}\n", []bool{true}, "EKS replaces a node whose GPU fails"},
		{"long-lived arm64", false, "    - {name: a, profile: gb200-nvl72, capacityReservationId: cr-0123456789abcdef0}\n", []bool{true}, "on arm64 the node monitoring agent's chart runs no DCGM server, so a failed GPU does not trigger a repair"},
		{"arm64, the pool asks", true, "    - {name: a, profile: gb200-nvl72, capacityReservationId: cr-0123456789abcdef0, nodeRepair: true}\n", []bool{true}, "nodeRepair: true: EKS replaces a node that stays NotReady"},
	} {
		s, err := load(c.benchmarks, c.pools)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i, want := range c.want {
			if s.Pools[i].NodeRepair.Enabled != want {
				t.Errorf("%s: pool %s repair %v, want %v", c.name, s.Pools[i].Name, s.Pools[i].NodeRepair.Enabled, want)
			}
		}
		if !strings.Contains(s.Pools[0].NodeRepair.Reason, c.reason) {
			t.Errorf("%s: reason %q, want %q", c.name, s.Pools[0].NodeRepair.Reason, c.reason)
		}
		if s.NodeRepairAnywhere() != (c.want[0] || len(c.want) > 1 && c.want[1]) {
			t.Errorf("%s: NodeRepairAnywhere %v", c.name, s.NodeRepairAnywhere())
		}
	}
	// Two Karpenter pools that disagree: the controller's gate is on, and the pool without
	// repair holds it off by its Unhealthy budget of 0; the other repairs one node at a time.
	s, err := load(false, "    - {name: a, profile: karpenter-p5}\n    - name: b\n      profile: karpenter-p5\n      nodeRepair: false\n")
	if err != nil || !s.KarpenterNodeRepair() || s.Pools[0].NodeRepair.UnhealthyBudget != "1" || s.Pools[1].NodeRepair.UnhealthyBudget != "0" ||
		!strings.Contains(s.Pools[1].NodeRepair.Reason, "budget for Unhealthy nodes is 0") ||
		!strings.Contains(s.Pools[0].NodeRepair.Reason, "Karpenter replaces a node whose GPU fails") {
		t.Errorf("disagreeing Karpenter pools: %v, gate %v, pools %+v", err, s.KarpenterNodeRepair(), s.Pools)
	}
	// A repairing managed pool leaves the controller's gate to the Karpenter pools: off here.
	s, err = load(false, "    - {name: a, profile: p5-efa}\n    - {name: b, profile: karpenter-p5, nodeRepair: false}\n")
	if err != nil || s.KarpenterNodeRepair() || !s.Pools[0].NodeRepair.Enabled || !s.NodeRepairAnywhere() || s.Pools[0].NodeRepair.UnhealthyBudget != "" {
		t.Errorf("a repairing managed pool beside a Karpenter pool without repair: %v, gate %v, managed repair %v", err, s.KarpenterNodeRepair(), s.Pools[0].NodeRepair.Enabled)
	}
	// Agreeing ones turn the controller's gate on; a managed pool beside them may differ.
	s, err = load(false, "    - {name: a, profile: karpenter-p5}\n    - {name: b, profile: p5-efa, nodeRepair: false}\n")
	if err != nil || !s.KarpenterNodeRepair() {
		t.Errorf("agreeing Karpenter pools: %v, gate %v", err, s.KarpenterNodeRepair())
	}
}

// TestKarpenterRepairTimesAreKarpenters holds the minutes a Karpenter pool's repair reason states
// to the pinned release's RepairPolicies (pkg/cloudprovider/cloudprovider.go): the Ready policies,
// the AcceleratedHardwareReady policies that name XIDs, and the one that names none (the
// fallback). The legacy policies, which gpucluster does not turn on, are not read.
func TestKarpenterRepairTimesAreKarpenters(t *testing.T) {
	mod, err := kubeapi.KarpenterModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(mod, "pkg", "cloudprovider", "cloudprovider.go"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(src)
	start := strings.Index(body, "func (c *CloudProvider) RepairPolicies()")
	if start < 0 {
		t.Fatal("no RepairPolicies in cloudprovider.go: has the file's shape changed?")
	}
	body = body[start:]
	body = body[strings.Index(body, "return []cloudprovider.RepairPolicy{"):]
	body = body[:strings.Index(body, "\n}\n")]
	minutes := map[string][]int{} // "<condition> <named|any|fallback>" → toleration minutes
	for _, policy := range regexp.MustCompile(`(?s)\{\s*(?://[^\n]*\n\s*)*ConditionType:.*?\n\t\t\},?`).FindAllString(body, -1) {
		cond := regexp.MustCompile(`ConditionType:\s*(?:corev1\.Node(\w+)|"(\w+)")`).FindStringSubmatch(policy)
		tol := regexp.MustCompile(`TolerationDuration:\s*(\d+) \* time\.Minute`).FindStringSubmatch(policy)
		if cond == nil || tol == nil {
			t.Fatalf("a policy this test cannot read:\n%s", policy)
		}
		kind := "fallback" // no ReasonRegex: the policy for every reason no other names
		if re := regexp.MustCompile("ReasonRegex:\\s*(\"[^\"]*\"|`[^`]*`)").FindStringSubmatch(policy); re != nil {
			kind = "named"
			if re[1] == `".*"` {
				kind = "any"
			}
		}
		minutes[cond[1]+cond[2]+" "+kind] = append(minutes[cond[1]+cond[2]+" "+kind], atoi(tol[1]))
	}
	for key, want := range map[string]int{
		"Ready any":                         karpenterNotReadyRepairMinutes,
		"AcceleratedHardwareReady named":    karpenterKnownXIDRepairMinutes,
		"AcceleratedHardwareReady fallback": karpenterGPURepairMinutes,
	} {
		if len(minutes[key]) == 0 {
			t.Errorf("%s: no such policy in Karpenter %s (read %v)", key, kubeapi.KarpenterVersion, minutes)
		}
		for _, got := range minutes[key] {
			if got != want {
				t.Errorf("%s: Karpenter %s repairs after %d minutes; the pool's reason says %d", key, kubeapi.KarpenterVersion, got, want)
			}
		}
	}
}
