package topology

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestGB200EFAGetsTheTopologyOverride: a p6e-gb200 pool on the EKS image (driver 580) or a
// custom image before R595 gets NVreg_GrdmaPciTopoCheckOverride=1 through its user data; on the
// EKS image its node group is pinned to the release whose driver that is. A custom R595 image,
// where the option no longer acts, is refused at the line of nvidiaDriverVersion. No other type
// (p5, whose GPUs are PCIe devices) gets either.
func TestGB200EFAGetsTheTopologyOverride(t *testing.T) {
	load := func(pool, driver string) (StackSpec, error) {
		t.Helper()
		data := "config:\n  aws:region: us-east-1\n  gpucluster:kubernetesVersion: \"1.34\"\n"
		if driver != "" {
			data += "  gpucluster:nvidiaDriverVersion: \"" + driver + "\"\n"
		}
		file := filepath.Join(t.TempDir(), "Pulumi.t.yaml")
		os.WriteFile(file, []byte(data+"  gpucluster:pools:\n    - "+pool+"\n"), 0o644)
		return LoadStack(file, planDay)
	}
	gb200 := "{name: nvl, profile: gb200-nvl72, capacityReservationId: cr-0123456789abcdef0"
	custom := ", amiFamily: custom, amiId: ami-0123456789abcdef0"
	for _, c := range []struct {
		what, pool, driver string
		override           bool
		release            string
		refused            string
	}{
		{"GB200 on the EKS image", gb200 + "}", "", true, "1.34.9-20260714", ""},
		{"GB200 on a custom 580 image", gb200 + custom + "}", "580.95.05", true, "", ""},
		{"GB200 on a custom 590 image", gb200 + custom + "}", "590.44.01", true, "", ""},
		{"GB200 on a custom 595 image", gb200 + custom + "}", "595.45.04", false, "",
			"Pulumi.t.yaml:4: gpucluster:nvidiaDriverVersion: pool nvl: driver 595.45.04 (R595) breaks GPUDirect RDMA over EFA on p6e-gb200.36xlarge"},
		{"p5 (PCIe GPUs)", "{name: train, profile: p5-efa}", "", false, "", ""},
	} {
		s, err := load(c.pool, c.driver)
		if c.refused != "" {
			if err == nil || !strings.Contains(err.Error(), c.refused) || !strings.Contains(err.Error(), "580-branch driver") {
				t.Errorf("%s: %v, want refused: %q and the fix", c.what, err, c.refused)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		p := s.Pools[0]
		if got := slices.Contains(p.AMI.NVIDIAModuleOptions, GrdmaTopologyOverride); got != c.override {
			t.Errorf("%s: options %v, want the override %v", c.what, p.AMI.NVIDIAModuleOptions, c.override)
		}
		if c.override && !strings.Contains(p.AMI.ModuleOptionsReason, "GPUDirect RDMA over EFA") {
			t.Errorf("%s: reason %q", c.what, p.AMI.ModuleOptionsReason)
		}
		if p.AMI.NodeGroupReleaseVersion != c.release || (c.release != "") != strings.Contains(p.AMI.ReleaseVersionReason, DefaultNVIDIADriverVersion) {
			t.Errorf("%s: node group release %q (%q), want %q", c.what, p.AMI.NodeGroupReleaseVersion, p.AMI.ReleaseVersionReason, c.release)
		}
	}
}
