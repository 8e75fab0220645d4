package topology

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// What a cluster costs besides its instances, us-east-1 list prices. No module the build holds
// publishes them, so each is quoted with its source: Amazon EKS pricing (per cluster-hour: $0.10
// for a version in standard support, $0.60 in all for one in extended support; AWS blog "Amazon
// EKS extended support for Kubernetes versions pricing"), Amazon VPC pricing (NAT gateway hour;
// the $0.045 per GB it processes is traffic, not counted here), Amazon EBS pricing (gp3 storage;
// its baseline IOPS and throughput are free).
const (
	EKSControlPlaneUSDPerHour    = 0.10
	EKSExtendedSupportUSDPerHour = 0.60
	NATGatewayUSDPerHour         = 0.045
	GP3USDPerGBMonth             = 0.08
	hoursPerMonth                = 730
	CostSource                   = "AWS list prices, us-east-1: Amazon EKS (standard and extended support), Amazon VPC (NAT gateway), Amazon EBS (gp3)"
)

// systemRootVolumeGiB is the system nodes' root volume (the cluster component's launch template).
const systemRootVolumeGiB = 50

// CostLine is one item of a stack's hourly cost.
type CostLine struct {
	Item string `json:"item"`
	Pool string `json:"pool,omitempty"`
	// AtDeploy and AtMost are USD per hour after `pulumi up` and at every pool's maximum.
	AtDeploy float64 `json:"atDeploy"`
	AtMost   float64 `json:"atMost"`
	// Known is false when no price is in the source: the amounts are then 0 and the totals a floor.
	Known bool   `json:"known"`
	Note  string `json:"note,omitempty"`
}

// StackCost is what a stack costs per hour, item by item. Reserved capacity (ODCR, Capacity
// Block) is billed by the reservation, not by the hour used: it is listed apart and not in the
// totals.
type StackCost struct {
	Lines    []CostLine `json:"lines"`
	Reserved []CostLine `json:"reserved,omitempty"`
	AtDeploy float64    `json:"atDeploy"`
	AtMost   float64    `json:"atMost"`
	// Complete: every item had a price; otherwise the totals are floors.
	Complete bool   `json:"complete"`
	Source   string `json:"source"`
}

// EstimateCost prices a derived stack with us-east-1 list prices (catalog.PriceSource for instances,
// CostSource for the rest) as of at, the day the plan is made or `pulumi up` runs: the control
// plane by its version's support on that day (controlPlaneCost). Other regions differ; callers say so.
func EstimateCost(s StackSpec, at time.Time) StackCost {
	c := StackCost{Complete: true, Source: fmt.Sprintf("%s on-demand prices from %s (generated %s); %s", catalog.PriceRegion, catalog.PriceSource, catalog.PriceDate, CostSource)}
	add := func(l CostLine) {
		c.Lines = append(c.Lines, l)
		c.AtDeploy += l.AtDeploy
		c.AtMost += l.AtMost
		c.Complete = c.Complete && l.Known
	}
	add(controlPlaneCost(s, at))
	if s.VPC.Create {
		add(CostLine{Item: "NAT gateway", AtDeploy: NATGatewayUSDPerHour, AtMost: NATGatewayUSDPerHour, Known: true,
			Note: "plus $0.045 per GB it processes"})
	}
	sys := catalog.OnDemand(s.Cluster.SystemNodes.InstanceType)
	n := float64(s.Cluster.SystemNodes.Count)
	add(CostLine{Item: fmt.Sprintf("system nodes: %d × %s", s.Cluster.SystemNodes.Count, s.Cluster.SystemNodes.InstanceType),
		AtDeploy: sys.USDPerHour * n, AtMost: sys.USDPerHour * n, Known: sys.Known})
	volumes := VolumeUSDPerHour(systemRootVolumeGiB) * n
	volumesMost := volumes
	for _, p := range s.Pools {
		perNode := 0.0
		for _, v := range p.Storage.Volumes {
			perNode += VolumeUSDPerHour(v.SizeGiB)
		}
		volumes += perNode * float64(p.Scaling.DesiredNodes)
		volumesMost += perNode * float64(p.Scaling.MaxNodes)
	}
	add(CostLine{Item: "EBS root volumes (gp3)", AtDeploy: volumes, AtMost: volumesMost, Known: true})
	for _, p := range s.Pools {
		price := catalog.OnDemand(p.Instance.Name)
		l := CostLine{Item: fmt.Sprintf("%d to %d × %s", p.Scaling.DesiredNodes, p.Scaling.MaxNodes, p.Instance.Name), Pool: p.Name,
			AtDeploy: price.USDPerHour * float64(p.Scaling.DesiredNodes), AtMost: price.USDPerHour * float64(p.Scaling.MaxNodes), Known: price.Known}
		if !price.Known {
			l.Note = fmt.Sprintf("no on-demand price for %s in the source", p.Instance.Name)
		}
		switch {
		case p.Capacity.Type.Reserved():
			l.AtDeploy, l.AtMost = 0, 0
			l.Note = fmt.Sprintf("%s: billed by the reservation for its whole term, used or not; not an hourly on-demand cost", p.Capacity.Type)
			c.Reserved = append(c.Reserved, l)
			continue
		case p.Capacity.Type == CapacitySpot:
			l.Note = "spot: the on-demand price is its ceiling"
		}
		add(l)
	}
	return c
}

// controlPlaneCost is the control plane's hourly price at at, by its version's EKS support: $0.10
// in standard support, $0.60 from the day it leaves it (EKS's default upgrade policy, EXTENDED,
// keeps the cluster on its version and bills extended support). With an expiry after that day,
// the most the stack costs is the extended price. Under the STANDARD policy it is always $0.10:
// EKS upgrades the cluster that day instead.
func controlPlaneCost(s StackSpec, at time.Time) CostLine {
	l := CostLine{Item: "EKS control plane (Kubernetes " + s.Cluster.KubernetesVersion + ")", AtDeploy: EKSControlPlaneUSDPerHour, AtMost: EKSControlPlaneUSDPerHour, Known: true}
	ends := StandardSupportEnds(s.Cluster.KubernetesVersion)
	if ends.IsZero() {
		return l
	}
	day := ends.Format(time.DateOnly)
	switch {
	case s.Cluster.UpgradePolicy == UpgradePolicyStandard:
		l.Note = fmt.Sprintf("standard support until %s, when EKS upgrades the cluster (upgradePolicy %s)", day, UpgradePolicyStandard)
	case !at.Before(ends):
		l.AtDeploy, l.AtMost = EKSExtendedSupportUSDPerHour, EKSExtendedSupportUSDPerHour
		l.Note = fmt.Sprintf("extended support since %s", day)
	case !s.ExpiresAt().IsZero() && s.ExpiresAt().After(ends):
		l.AtMost = EKSExtendedSupportUSDPerHour
		l.Note = fmt.Sprintf("extended support from %s, before the expiry: $%.2f per hour from then", day, EKSExtendedSupportUSDPerHour)
	default:
		l.Note = fmt.Sprintf("standard support until %s; $%.2f per hour after", day, EKSExtendedSupportUSDPerHour)
	}
	return l
}

// VolumeUSDPerHour is the hourly price of a gp3 volume of gib GiB.
func VolumeUSDPerHour(gib int) float64 { return GP3USDPerGBMonth * float64(gib) / hoursPerMonth }

// costDrivers names the pools that drive a stack's maximum cost, the most expensive first.
func costDrivers(c StackCost) []CostLine {
	var pools []CostLine
	for _, l := range c.Lines {
		if l.Pool != "" {
			pools = append(pools, l)
		}
	}
	sort.SliceStable(pools, func(i, j int) bool { return pools[i].AtMost > pools[j].AtMost })
	return pools
}
