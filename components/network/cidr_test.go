package network

import (
	"fmt"
	"net/netip"
	"testing"
)

func TestSubnetPlan(t *testing.T) {
	private, public, err := subnetPlan("10.0.0.0/16", 3)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(private) != "[10.0.0.0/19 10.0.32.0/19 10.0.64.0/19]" || fmt.Sprint(public) != "[10.0.224.0/22 10.0.228.0/22 10.0.232.0/22]" {
		t.Errorf("private %v public %v", private, public)
	}
	// Every size the topology core accepts: all subnets inside the VPC, none overlapping.
	for bits := 16; bits <= 20; bits++ {
		for zones := 1; zones <= 6; zones++ {
			vpc := netip.MustParsePrefix(fmt.Sprintf("172.16.0.0/%d", bits))
			private, public, err := subnetPlan(vpc.String(), zones)
			if err != nil {
				t.Fatal(err)
			}
			all := append(append([]string{}, private...), public...)
			for i, a := range all {
				pa := netip.MustParsePrefix(a)
				if !vpc.Contains(pa.Addr()) || pa.Bits() < vpc.Bits() {
					t.Errorf("/%d: %s is outside the VPC", bits, a)
				}
				for _, b := range all[i+1:] {
					if pa.Overlaps(netip.MustParsePrefix(b)) {
						t.Errorf("/%d x %d zones: %s overlaps %s", bits, zones, a, b)
					}
				}
			}
		}
	}
	if _, _, err := subnetPlan("10.0.0.0/16", 7); err == nil {
		t.Error("7 zones do not fit the plan")
	}
}
