package topology

import (
	"fmt"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// networkInterfaces lays out a launch template's interfaces per current EC2 guidance
// ("Maximize network bandwidth on accelerated instance types", efa-acc-inst-types.html):
// card 0 device 0 is the primary ENA `interface`; an EFA on card 0 is device 1 `efa-only`;
// every other EFA card carries one `efa-only` at device 0. One EFA per card, on the type's EFA
// cards (catalog.InstanceType.EFANetworkCards): p5 gets 1 ENA + 32 EFA over cards 0-31,
// p6-b300 1 ENA on card 0 + 16 EFA on cards 1-16. An ENA-only pool gets the primary interface alone.
func networkInterfaces(it catalog.InstanceType, efa int) ([]NetworkInterface, error) {
	nics := []NetworkInterface{{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: InterfaceENA, DeleteOnTermination: true}}
	for _, card := range it.EFANetworkCards(efa) {
		device := 0
		if card == 0 {
			device = 1
		}
		nics = append(nics, NetworkInterface{NetworkCardIndex: card, DeviceIndex: device, InterfaceType: InterfaceEFAOnly, DeleteOnTermination: true})
	}
	// Invariants EC2 enforces at launch; a catalog error must not reach a launch template.
	for _, n := range nics {
		if n.NetworkCardIndex >= it.NetworkCards || n.DeviceIndex >= it.MaxENIsPerCard {
			return nil, fmt.Errorf("%s: interface on card %d device %d exceeds %d cards x %d interfaces",
				it.Name, n.NetworkCardIndex, n.DeviceIndex, it.NetworkCards, it.MaxENIsPerCard)
		}
	}
	return nics, nil
}

// efaSecurityGroupRules allow all traffic in from and out to the group itself. The egress rule
// matters: an egress to 0.0.0.0/0 does not cover EFA's SRD traffic, and NCCL then fails with
// "Unresponsive receiver" (EC2 user guide, "Prepare an EFA-enabled security group").
func efaSecurityGroupRules() []SecurityGroupRule {
	return []SecurityGroupRule{
		{Direction: "ingress", Protocol: "-1", Self: true, Description: "EFA: all traffic from members of this group"},
		{Direction: "egress", Protocol: "-1", Self: true, Description: "EFA: all traffic to members of this group"},
	}
}
