package topology

import (
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// TestNodeAddressesCountThePrimaryOnce: the VPC CNI fills the primary interface with every
// address the type allows per interface, its own among them (p5.48xlarge: 50, Karpenter's
// generated vpclimits); another ENA interface takes one address more, an efa-only interface
// none. The figures are written out here, not derived, so that a miscount in either direction fails.
func TestNodeAddressesCountThePrimaryOnce(t *testing.T) {
	primary := NetworkInterface{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: InterfaceENA}
	efaOnly := NetworkInterface{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: InterfaceEFAOnly}
	secondENA := NetworkInterface{NetworkCardIndex: 2, DeviceIndex: 0, InterfaceType: InterfaceENA}
	for _, c := range []struct {
		name       string
		interfaces []NetworkInterface
		want       int
	}{
		{"no interfaces given (system nodes)", nil, 50},
		{"the primary alone", []NetworkInterface{primary}, 50},
		{"primary and 32 efa-only", append([]NetworkInterface{primary}, repeatInterface(efaOnly, 32)...), 50},
		{"primary, efa-only and a second ENA", []NetworkInterface{primary, efaOnly, secondENA}, 51},
	} {
		got, err := nodeAddresses("p5.48xlarge", c.interfaces)
		if err != nil || got != c.want {
			t.Errorf("%s: %d addresses, %v; want %d", c.name, got, err, c.want)
		}
	}
}

func repeatInterface(n NetworkInterface, count int) []NetworkInterface {
	out := make([]NetworkInterface, count)
	for i := range out {
		out[i] = n
		out[i].NetworkCardIndex = i + 1
	}
	return out
}

// TestSubnetCapacityBoundary holds checkSubnetCapacity to figures worked out by hand. A /20 VPC
// gives each zone a /23 private subnet: 512 addresses less AWS's 5 = 507. A p5.48xlarge with its
// primary interface and one more ENA takes 50 + 1 = 51 (above); an m7i.large system node 10 (EC2
// user guide, "IP addresses per network interface per instance type": 10 IPv4 per interface).
// Fifteen system nodes (150) and seven GPU nodes (357) fill zone a exactly: accepted. An eighth
// node, or a pool of thirteen spread over two zones (seven in the fuller one), does not fit.
func TestSubnetCapacityBoundary(t *testing.T) {
	p5, ok := catalog.Lookup("p5.48xlarge")
	if !ok {
		t.Fatal("no p5.48xlarge in the catalog")
	}
	twoENAs := []NetworkInterface{
		{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: InterfaceENA},
		{NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: InterfaceENA},
	}
	check := func(maxNodes int, zones ...string) error {
		spec := StackSpec{
			VPC:     VPCSettings{Create: true, CIDR: "10.0.0.0/20", AvailabilityZones: []string{"us-east-1a"}},
			Cluster: ClusterSettings{SystemNodes: SystemNodes{InstanceType: "m7i.large", Count: 15}},
			Pools: []PoolSpec{{Name: "gpu", Instance: p5, AvailabilityZones: zones,
				Network: NetworkSpec{Interfaces: twoENAs}, Scaling: Scaling{MaxNodes: maxNodes}}},
		}
		return checkSubnetCapacity(spec, Stack{File: "stacks/Pulumi.x.yaml", Pools: []Pool{{sizeKey: "gpucluster:pools[0].nodes", sizeLine: 7}}})
	}
	if err := check(7, "us-east-1a"); err != nil {
		t.Errorf("507 addresses used of 507: %v", err)
	}
	err := check(8, "us-east-1a")
	if err == nil || !strings.Contains(err.Error(), "zone us-east-1a needs 558; its private subnet (a /23 of 10.0.0.0/20) has 507") {
		t.Errorf("558 addresses used of 507: %v", err)
	}
	// Thirteen nodes over zones a and b: seven in each (rounded up, as the Auto Scaling group
	// may place them), and zone a also holds the fifteen system nodes.
	if err := check(13, "us-east-1a", "us-east-1b"); err != nil {
		t.Errorf("13 nodes over two zones, 507 used in zone a: %v", err)
	}
	if err := check(15, "us-east-1a", "us-east-1b"); err == nil || !strings.Contains(err.Error(), "zone us-east-1a needs 558") {
		t.Errorf("15 nodes over two zones (8 in zone a): %v", err)
	}
}
