package topology

import (
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// Every catalog type belongs to a quota class: a type added to the catalog without one fails here.
func TestEveryCatalogTypeHasAVCPUQuota(t *testing.T) {
	for _, name := range catalog.Names() {
		for _, spot := range []bool{false, true} {
			if _, err := vcpuQuotaName(name, spot); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestVCPUQuotasOfAStack(t *testing.T) {
	spec, err := LoadStack("../../stacks/Pulumi.mixed.yaml", planDay)
	if err != nil {
		t.Fatal(err)
	}
	q, err := VCPUQuotas(spec)
	if err != nil {
		t.Fatal(err)
	}
	// train is on a Capacity Block: only infer (0 to 3 × g6e.48xlarge, 192 vCPU) needs quota.
	if len(q) != 1 || q[0].Name != "Running On-Demand G and VT instances" || q[0].VCPUs != 3*192 || len(q[0].Pools) != 1 || q[0].Pools[0] != "infer" {
		t.Errorf("mixed: %+v", q)
	}
	spec, err = LoadStack("../../stacks/Pulumi.p5-efa.yaml", planDay)
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := VCPUQuotas(spec); len(q) != 1 || q[0].Name != "Running On-Demand P instances" || q[0].VCPUs != 384 {
		t.Errorf("p5-efa: %+v", q)
	}
}
