package topology

import (
	"fmt"
	"sort"
	"strings"
)

// EC2 limits how many vCPUs of running instances an account may have per region, one quota per
// class of instance families (Amazon EC2 User Guide, "Amazon EC2 service quotas": On-Demand
// Instance quotas, and Spot Instance quotas, both counted in vCPUs). New accounts often start
// with 0 for the GPU classes. Instances in a reserved capacity (an ODCR or a Capacity Block) are
// the reservation's: what they need was settled when it was bought, and it is not added here.
var vcpuQuotaClasses = []struct {
	prefixes       []string // instance family prefixes of the class
	onDemand, spot string
}{
	{[]string{"p"}, "Running On-Demand P instances", "All P Spot Instance Requests"},
	{[]string{"g", "vt"}, "Running On-Demand G and VT instances", "All G and VT Spot Instance Requests"},
}

// VCPUQuota is one EC2 vCPU quota a stack's GPU pools draw on, and how much of it they need at
// every pool's maximum.
type VCPUQuota struct {
	Name  string   `json:"name"`
	VCPUs int      `json:"vcpus"`
	Pools []string `json:"pools"`
}

// VCPUQuotas are the vCPU quotas a stack's GPU pools need at their maximum size, each with the
// pools that need it; pools on reserved capacity need none. A type of no known class is an error
// here, since the catalog holds only P and G types.
func VCPUQuotas(s StackSpec) ([]VCPUQuota, error) {
	need := map[string]*VCPUQuota{}
	for _, p := range s.Pools {
		if p.Capacity.Type.Reserved() {
			continue
		}
		name, err := vcpuQuotaName(p.Instance.Name, p.Capacity.Type == CapacitySpot)
		if err != nil {
			return nil, err
		}
		q := need[name]
		if q == nil {
			q = &VCPUQuota{Name: name}
			need[name] = q
		}
		q.VCPUs += p.Scaling.MaxNodes * p.Instance.VCPUs
		q.Pools = append(q.Pools, p.Name)
	}
	var out []VCPUQuota
	for _, name := range SortedKeys(need) {
		out = append(out, *need[name])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].VCPUs > out[j].VCPUs })
	return out, nil
}

// vcpuQuotaName is the quota an instance type's running instances count against.
func vcpuQuotaName(instanceType string, spot bool) (string, error) {
	family, _, _ := strings.Cut(instanceType, ".")
	for _, c := range vcpuQuotaClasses {
		for _, prefix := range c.prefixes {
			if strings.HasPrefix(family, prefix) {
				if spot {
					return c.spot, nil
				}
				return c.onDemand, nil
			}
		}
	}
	return "", fmt.Errorf("%s: no vCPU quota class known for its family", instanceType)
}
