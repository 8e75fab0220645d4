package topology

import (
	"slices"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// TestHealthGateChecks: which checks each kind of node runs, written out per type: the fabric
// state only where NVSwitch GPUs report it (Hopper and later, not A100), NVLink on every
// NVSwitch type (the UltraServer's GB200 too), the CUDA wait where fabric manager must serve,
// the EFA check with the pool's EFA count, and never on a pool without EFA.
func TestHealthGateChecks(t *testing.T) {
	cases := []struct {
		instance string
		fabric   Fabric
		want     []string
		efa      int
	}{
		{"p4d.24xlarge", FabricEFA, []string{"cuda", "gpu-count", "gpu-model", "nvlink", "efa-devices"}, 4},
		{"p5.48xlarge", FabricEFA, []string{"cuda", "gpu-count", "gpu-model", "fabric-state", "nvlink", "efa-devices"}, 32},
		{"p5.48xlarge", FabricENAOnly, []string{"cuda", "gpu-count", "gpu-model", "fabric-state", "nvlink"}, 0},
		{"p6-b200.48xlarge", FabricEFA, []string{"cuda", "gpu-count", "gpu-model", "fabric-state", "nvlink", "efa-devices"}, 8},
		{"p6e-gb200.36xlarge", FabricEFA, []string{"gpu-count", "gpu-model", "fabric-state", "nvlink", "efa-devices"}, 8},
		{"g6e.48xlarge", FabricEFA, []string{"gpu-count", "gpu-model", "efa-devices"}, 4},
		{"g6e.12xlarge", FabricENAOnly, []string{"gpu-count", "gpu-model"}, 0},
		{"p5.4xlarge", FabricEFA, []string{"gpu-count", "gpu-model", "efa-devices"}, 1},
	}
	for _, c := range cases {
		p := base()
		p.InstanceType, p.Fabric = c.instance, c.fabric
		if it, _ := catalog.Lookup(c.instance); it.MultiNodeNVLink() { // one whole UltraServer
			p.Capacity, p.CapacityReservationID, p.MinNodes, p.MaxNodes = CapacityCapacityBlock, "cr-0123456789abcdef0", 18, 18
		}
		s, err := Derive("x", p)
		if err != nil {
			t.Fatalf("%s: %v", c.instance, err)
		}
		g := s.HealthGate
		if !slices.Equal(g.Checks, c.want) || g.EFADevices != c.efa || g.GPUs != s.Instance.GPUCount || g.GPUModel != s.Instance.GPUModel {
			t.Errorf("%s %s: %+v, want checks %v and %d EFA devices", c.instance, c.fabric, g, c.want, c.efa)
		}
		if g.Describe() == "" || !slices.Equal(s.StartupTaints, []Taint{HealthTaint}) {
			t.Errorf("%s: %q, startup taints %v", c.instance, g.Describe(), s.StartupTaints)
		}
	}
}

// Every type in the catalog gets a gate that counts its GPUs and names their model, and only
// checks from HealthChecks, in their order.
func TestEveryTypeHasAHealthGate(t *testing.T) {
	for _, it := range catalog.All() {
		g := deriveHealthGate(it, deriveFabricManager(base(), it), 0, AMIAL2023NVIDIA)
		if len(g.Checks) < 2 || g.Checks[0] == HealthCheckCUDA && !it.FabricManager {
			t.Errorf("%s: %v", it.Name, g.Checks)
		}
		last := -1
		for _, c := range g.Checks {
			i := slices.Index(HealthChecks, c)
			if i <= last {
				t.Errorf("%s: check %q out of order or unknown in %v", it.Name, c, g.Checks)
			}
			last = i
		}
		if g.GPUs < 1 || g.GPUModel == "" || g.WaitSeconds <= 0 {
			t.Errorf("%s: %+v", it.Name, g)
		}
	}
}
