package topology

import "testing"

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
