package network

import (
	"fmt"
	"net/netip"

	"github.com/gpucluster/gpucluster/components/topology"
)

// subnetPlan carves a VPC CIDR into one private and one public subnet per zone: the VPC is cut
// into 8 blocks (prefix+3); blocks 0..n-1 are the private subnets (GPU nodes, pods: VPC CNI gives
// every pod a VPC address, so they are the large ones); block 7 is cut into 8 (prefix+6) for the
// public subnets, which hold only NAT gateways and load balancers. A /16 gives /19 private and
// /22 public subnets. The topology core validates /16../20 and at most 6 zones.
func subnetPlan(vpcCIDR string, zones int) (private, public []string, err error) {
	vpc, err := netip.ParsePrefix(vpcCIDR)
	if err != nil || !vpc.Addr().Is4() {
		return nil, nil, fmt.Errorf("VPC CIDR %q is not an IPv4 prefix", vpcCIDR)
	}
	if zones < 1 || zones > 6 {
		return nil, nil, fmt.Errorf("%d zones: between 1 and 6 fit the plan", zones)
	}
	vpc = vpc.Masked()
	for i := 0; i < zones; i++ {
		private = append(private, nth(vpc, topology.PrivateSubnetExtraBits, i).String())
		public = append(public, nth(nth(vpc, topology.PrivateSubnetExtraBits, 7), 3, i).String())
	}
	return private, public, nil
}

// nth returns the i-th sub-prefix of p that is extra bits longer.
func nth(p netip.Prefix, extra, i int) netip.Prefix {
	bits := p.Bits() + extra
	base := p.Addr().As4()
	v := uint32(base[0])<<24 | uint32(base[1])<<16 | uint32(base[2])<<8 | uint32(base[3])
	v += uint32(i) << (32 - bits)
	addr := netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	return netip.PrefixFrom(addr, bits)
}
