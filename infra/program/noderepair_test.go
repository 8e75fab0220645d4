package program

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/nodehealth"
	"github.com/gpucluster/gpucluster/components/topology"
)

// TestNodeRepairReachesEveryPool: each managed node group's nodeRepairConfig is its pool's
// decision; the Karpenter controller's nodeRepair gate is the stack's Karpenter pools'; the node
// monitoring agent add-on, with its DCGM server tolerating the GPU nodes' taints, is there
// exactly when some pool repairs its nodes. Every stack: those without benchmarks repair, the
// benchmark stacks do not.
func TestNodeRepairReachesEveryPool(t *testing.T) {
	repairing := 0
	for _, file := range stackFiles(t) {
		ev := evaluate(t, file)
		name := filepath.Base(file)
		for _, p := range ev.spec.Pools {
			if p.NodeRepair.Enabled == ev.spec.Benchmarks.Enabled {
				t.Errorf("%s: pool %s repair %v with benchmarks %v: %s", name, p.Name, p.NodeRepair.Enabled, ev.spec.Benchmarks.Enabled, p.NodeRepair.Reason)
			}
			if p.Provisioner == topology.ProvisionerKarpenter {
				continue
			}
			ng := one(t, ev.poolChildren(p.Name, "aws:eks/nodeGroup:NodeGroup"), "node groups of "+p.Name)
			if got := ng.Input("nodeRepairConfig"); str(got) != str(map[string]any{"enabled": p.NodeRepair.Enabled}) {
				t.Errorf("%s: pool %s nodeRepairConfig %v, want enabled %v", name, p.Name, got, p.NodeRepair.Enabled)
			}
		}
		// The gate is on exactly when a Karpenter pool of the stack repairs (the pools' own
		// decisions, counted here; TestKarpenterRepairGateIsTheKarpenterPoolsAlone writes it out).
		wantGate := false
		for _, p := range ev.spec.Pools {
			wantGate = wantGate || p.Provisioner == topology.ProvisionerKarpenter && p.NodeRepair.Enabled
		}
		for _, c := range ev.ofType("kubernetes:helm.sh/v4:Chart") {
			if c.Input("chart") != karpenter.ChartRef {
				continue
			}
			gates := c.Input("values").(map[string]any)["settings"].(map[string]any)["featureGates"].(map[string]any)
			if gates["nodeRepair"] != wantGate {
				t.Errorf("%s: Karpenter nodeRepair gate %v, want %v", name, gates["nodeRepair"], wantGate)
			}
		}
		var agents []any
		for _, a := range ev.ofType("aws:eks/addon:Addon") {
			if a.Input("addonName") != nodehealth.AddonName {
				continue
			}
			var config map[string]any
			if err := json.Unmarshal([]byte(str(a.Input("configurationValues"))), &config); err != nil ||
				fmt.Sprint(config["dcgmAgent"]) != fmt.Sprint(map[string]any{"tolerations": []any{map[string]any{"operator": "Exists"}}}) {
				t.Errorf("%s: the agent's configuration %v (%v)", name, a.Input("configurationValues"), err)
			}
			agents = append(agents, a)
		}
		if want := ev.spec.NodeRepairAnywhere(); (len(agents) == 1) != want || len(agents) > 1 {
			t.Errorf("%s: %d node monitoring agents, repair anywhere %v", name, len(agents), want)
		}
		if ev.spec.NodeRepairAnywhere() {
			repairing++
		}
	}
	if repairing == 0 {
		t.Error("no stack repairs its nodes: the add-on is never proven")
	}
}

// TestKarpenterRepairGateIsTheKarpenterPoolsAlone: the chart's gate, written out per stack: on
// where a stack's Karpenter pools repair, off where they do not, whatever a managed pool beside
// them does (Karpenter's gate acts on every NodePool, a managed node group's repair on itself).
func TestKarpenterRepairGateIsTheKarpenterPoolsAlone(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		pools string
		gate  bool
	}{
		"managed-repairs-karpenter-not": {"    - {name: a, profile: p5-efa}\n    - {name: b, profile: karpenter-p5, nodeRepair: false}\n", false},
		"both-repair":                   {"    - {name: a, profile: p5-efa}\n    - {name: b, profile: karpenter-p5}\n", true},
		"karpenter-repairs-managed-not": {"    - {name: a, profile: p5-efa, nodeRepair: false}\n    - {name: b, profile: karpenter-p5}\n", true},
	} {
		file := filepath.Join(dir, "Pulumi."+name+".yaml")
		if err := os.WriteFile(file, []byte("config:\n  aws:region: us-west-2\n  gpucluster:pools:\n"+c.pools), 0o644); err != nil {
			t.Fatal(err)
		}
		charts := 0
		for _, ch := range evaluate(t, file).ofType("kubernetes:helm.sh/v4:Chart") {
			if ch.Input("chart") != karpenter.ChartRef {
				continue
			}
			charts++
			if gate := ch.Input("values").(map[string]any)["settings"].(map[string]any)["featureGates"].(map[string]any)["nodeRepair"]; gate != c.gate {
				t.Errorf("%s: Karpenter's nodeRepair gate %v, want %v", name, gate, c.gate)
			}
		}
		if charts != 1 {
			t.Errorf("%s: %d Karpenter charts", name, charts)
		}
	}
}
