package topology

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGB200EFAGetsTheTopologyOverride: a p6e-gb200 pool on the EKS image (driver 580) or a
// custom image before R595 gets NVreg_GrdmaPciTopoCheckOverride=1 through its user data; one on
// a custom R595 image, where the option no longer acts, gets a warning instead; no other type
// (p5, whose GPUs are PCIe devices) gets either.
func TestGB200EFAGetsTheTopologyOverride(t *testing.T) {
	load := func(pool, driver string) StackSpec {
		t.Helper()
		data := "config:\n  aws:region: us-east-1\n"
		if driver != "" {
			data += "  gpucluster:nvidiaDriverVersion: \"" + driver + "\"\n"
		}
		file := filepath.Join(t.TempDir(), "Pulumi.t.yaml")
		os.WriteFile(file, []byte(data+"  gpucluster:pools:\n    - "+pool+"\n"), 0o644)
		s, err := LoadStack(file, planDay)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	gb200 := "{name: nvl, profile: gb200-nvl72, capacityReservationId: cr-0123456789abcdef0"
	custom := ", amiFamily: custom, amiId: ami-0123456789abcdef0"
	for _, c := range []struct {
		what, pool, driver string
		override           bool
		warning            string
	}{
		{"GB200 on the EKS image", gb200 + "}", "", true, ""},
		{"GB200 on a custom 580 image", gb200 + custom + "}", "580.95.05", true, ""},
		{"GB200 on a custom 590 image", gb200 + custom + "}", "590.44.01", true, ""},
		{"GB200 on a custom 595 image", gb200 + custom + "}", "595.45.04", false, "driver 595.45.04 (R595) ignores NVreg_GrdmaPciTopoCheckOverride=1"},
		{"p5 (PCIe GPUs)", "{name: train, profile: p5-efa}", "", false, ""},
	} {
		p := load(c.pool, c.driver).Pools[0]
		if got := slices.Contains(p.AMI.NVIDIAModuleOptions, GrdmaTopologyOverride); got != c.override {
			t.Errorf("%s: options %v, want the override %v", c.what, p.AMI.NVIDIAModuleOptions, c.override)
		}
		if c.override && !strings.Contains(p.AMI.ModuleOptionsReason, "GPUDirect RDMA over EFA") {
			t.Errorf("%s: reason %q", c.what, p.AMI.ModuleOptionsReason)
		}
		var warned []string
		for _, f := range p.Findings {
			if f.Code == FindingGPUDirectRDMAOff {
				warned = append(warned, f.Message)
			}
		}
		if (c.warning == "") != (len(warned) == 0) || len(warned) > 0 && !strings.Contains(warned[0], c.warning) {
			t.Errorf("%s: warnings %v, want %q", c.what, warned, c.warning)
		}
	}
}
