package topology

import (
	"strings"
	"testing"
)

// TestNodeRepairFollowsTheStack: on by default where the stack runs no benchmarks, off where it
// does (a replaced node would spoil a run), the pool's key over both; the stack's Karpenter
// pools share one switch, the controller's feature gate.
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
	// Two Karpenter pools that disagree: refused at the line that turns one off.
	_, err := load(false, "    - {name: a, profile: karpenter-p5}\n    - name: b\n      profile: karpenter-p5\n      nodeRepair: false\n")
	if err == nil || !strings.Contains(err.Error(), "r.yaml:7: gpucluster:pools[1].nodeRepair: Karpenter pools a repair nodes and b do not") ||
		!strings.Contains(err.Error(), "give every Karpenter pool the same nodeRepair") {
		t.Errorf("disagreeing Karpenter pools: %v", err)
	}
	// A repairing managed pool leaves the controller's gate to the Karpenter pools: off here.
	s, err := load(false, "    - {name: a, profile: p5-efa}\n    - {name: b, profile: karpenter-p5, nodeRepair: false}\n")
	if err != nil || s.KarpenterNodeRepair() || !s.Pools[0].NodeRepair.Enabled || !s.NodeRepairAnywhere() {
		t.Errorf("a repairing managed pool beside a Karpenter pool without repair: %v, gate %v, managed repair %v", err, s.KarpenterNodeRepair(), s.Pools[0].NodeRepair.Enabled)
	}
	// Agreeing ones turn the controller's gate on; a managed pool beside them may differ.
	s, err = load(false, "    - {name: a, profile: karpenter-p5}\n    - {name: b, profile: p5-efa, nodeRepair: false}\n")
	if err != nil || !s.KarpenterNodeRepair() {
		t.Errorf("agreeing Karpenter pools: %v, gate %v", err, s.KarpenterNodeRepair())
	}
}
