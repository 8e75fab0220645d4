package topology

import (
	"fmt"
	"net/netip"

	"github.com/aws/amazon-vpc-cni-k8s/pkg/vpc"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// PrivateSubnetExtraBits: a created VPC is carved into 8 blocks of its prefix + 3 bits; each zone's
// private subnet is one block (components/network's subnet plan).
const PrivateSubnetExtraBits = 3

// awsReservedPerSubnet are the addresses AWS keeps in every subnet (VPC user guide, "Subnet
// CIDR blocks": the first four and the last).
const awsReservedPerSubnet = 5

// privateSubnetAddresses is how many addresses a created VPC's private subnet gives its nodes
// and pods (0 when the CIDR cannot be read: validation reported it).
func privateSubnetAddresses(vpcCIDR string) int {
	p, err := netip.ParsePrefix(vpcCIDR)
	if err != nil {
		return 0
	}
	return 1<<(32-p.Bits()-PrivateSubnetExtraBits) - awsReservedPerSubnet
}

// nodeAddresses is the fewest private addresses a node takes in its subnet: one per interface
// that has one (ENA and EFA interfaces; efa-only interfaces take none), and the VPC CNI's
// secondary addresses for pods. With its default warm target (WARM_ENI_TARGET=1) the CNI fills
// the primary interface with every address the type allows per interface as soon as the node
// starts: the catalog's figure for a GPU type (Karpenter's generated limits, newer than the CNI
// module's), else amazon-vpc-cni-k8s IPv4Limit (pkg/vpc's generated table, which this reads).
func nodeAddresses(instanceType string, interfaces []NetworkInterface) (int, error) {
	perInterface, err := vpc.GetIPv4Limit(instanceType)
	if it, ok := catalog.Lookup(instanceType); ok {
		perInterface, err = it.IPv4PerInterface, nil
		if perInterface == 0 {
			err = fmt.Errorf("no generated data gives %s's addresses per interface", instanceType)
		}
	}
	if err != nil {
		return 0, err
	}
	n := perInterface // the primary interface, filled
	for i, nic := range interfaces {
		if i > 0 && nic.InterfaceType != InterfaceEFAOnly {
			n++
		}
	}
	return n, nil
}

// checkSubnetCapacity refuses a stack whose pools cannot all get addresses in their zones'
// private subnets at their maximum size, counting the system nodes too. A pool in several zones
// is counted as spread evenly (as its Auto Scaling group spreads it). An existing VPC's subnet
// sizes are unknown offline: only a created VPC is checked.
func checkSubnetCapacity(spec StackSpec, st Stack) error {
	if !spec.VPC.Create {
		return nil
	}
	capacity := privateSubnetAddresses(spec.VPC.CIDR)
	if capacity <= 0 {
		return nil
	}
	used := map[string]int{}
	system, err := nodeAddresses(spec.Cluster.SystemNodes.InstanceType, nil)
	if err == nil && len(spec.VPC.AvailabilityZones) > 0 {
		for i := range spec.Cluster.SystemNodes.Count {
			used[spec.VPC.AvailabilityZones[i%len(spec.VPC.AvailabilityZones)]] += system
		}
	}
	var errs ConfigErrors
	for i, p := range spec.Pools {
		per, err := nodeAddresses(p.Instance.Name, p.Network.Interfaces)
		if err != nil || len(p.AvailabilityZones) == 0 {
			continue // a type the CNI's table lacks: nothing to count by
		}
		zones := len(p.AvailabilityZones)
		for _, z := range p.AvailabilityZones {
			used[z] += (p.Scaling.MaxNodes + zones - 1) / zones * per
			if used[z] <= capacity {
				continue
			}
			pool := st.Pools[i]
			errs = append(errs, ConfigError{File: st.File, Line: pool.sizeLine, Key: pool.sizeKey,
				Message: fmt.Sprintf("pool %s's %d nodes take at least %d addresses each (the VPC CNI fills a %s's primary interface for pods; one more per ENA or EFA interface), "+
					"and with the pools and system nodes before it zone %s needs %d; its private subnet (a /%d of %s) has %d",
					p.Name, p.Scaling.MaxNodes, per, p.Instance.Name, z, used[z], prefixBits(spec.VPC.CIDR)+PrivateSubnetExtraBits, spec.VPC.CIDR, capacity),
				Fix: "lower the pool's node count, or give the VPC a larger " + KeyVPCCIDR + " (a shorter prefix)"})
			break
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

func prefixBits(cidr string) int {
	p, _ := netip.ParsePrefix(cidr)
	return p.Bits()
}
