package plan

import (
	"fmt"
	"sort"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Finding is one thing a reviewer should see, for a pool or ("" pool) the whole cluster.
type Finding struct {
	Severity string `json:"severity"`
	Code     string `json:"code"`
	Pool     string `json:"pool,omitempty"`
	Message  string `json:"message"`
}

var severityRank = map[string]int{topology.SeverityError: 0, topology.SeverityWarning: 1, topology.SeverityInfo: 2}

// Review lists the findings of a derived stack: each pool's (from the topology core), the
// cluster's, and the invariants of shared/DESIGN.md checked once more on the final spec. The
// topology core already refuses configs that break them; an error here means a bug, and the plan
// fails rather than let it reach a cluster.
func Review(spec topology.StackSpec) []Finding {
	var fs []Finding
	c := spec.Cluster
	if c.EndpointPublicAccess {
		for _, cidr := range c.PublicAccessCIDRs {
			if cidr == "0.0.0.0/0" {
				fs = append(fs, Finding{topology.SeverityWarning, "endpoint-open", "",
					"the API server endpoint is open to 0.0.0.0/0: set gpucluster:publicAccessCidrs to your networks, or endpointPublicAccess: false"})
			}
		}
	}
	for _, w := range spec.Warnings {
		fs = append(fs, Finding{topology.SeverityWarning, warningCode(w), "", w.Error()})
	}
	for _, p := range spec.Pools {
		for _, f := range p.Findings {
			fs = append(fs, Finding{f.Severity, f.Code, p.Name, f.Message})
		}
		fs = append(fs, invariants(p)...)
	}
	sort.SliceStable(fs, func(i, j int) bool {
		if severityRank[fs[i].Severity] != severityRank[fs[j].Severity] {
			return severityRank[fs[i].Severity] < severityRank[fs[j].Severity]
		}
		if fs[i].Pool != fs[j].Pool {
			return fs[i].Pool < fs[j].Pool
		}
		return fs[i].Code < fs[j].Code
	})
	return fs
}

func invariants(p topology.PoolSpec) []Finding {
	var fs []Finding
	bad := func(code, format string, args ...any) {
		fs = append(fs, Finding{topology.SeverityError, code, p.Name, fmt.Sprintf(format, args...)})
	}
	if p.Capacity.Type.Reserved() && p.Placement.Strategy != topology.PlacementNone {
		bad("reserved-capacity-with-placement-group", "%s pool has a %s placement group: launches would fail for lack of capacity", p.Capacity.Type, p.Placement.Strategy)
	}
	efa := p.Network.EFAInterfaces
	if efa > 0 {
		in, out := false, false
		for _, r := range p.Network.EFASecurityGroup {
			in = in || (r.Direction == "ingress" && r.Self && r.Protocol == "-1")
			out = out || (r.Direction == "egress" && r.Self && r.Protocol == "-1")
		}
		if !in || !out {
			bad("efa-security-group-not-self", "the EFA security group must allow all traffic in from and out to itself (NCCL: 'Unresponsive receiver')")
		}
		if len(p.AvailabilityZones) != 1 {
			bad("efa-pool-across-zones", "EFA pool in %d zones: EFA traffic does not cross subnets", len(p.AvailabilityZones))
		}
		if p.TrainingPod.EFAPerPod < 1 {
			bad("training-pod-without-efa", "training pods get no EFA device and would fall back to NET/Socket")
		}
	}
	for _, n := range p.Network.Interfaces {
		if n.AssociatePublicIPAddress {
			bad("public-ip", "interface on card %d asks for a public IP", n.NetworkCardIndex)
		}
	}
	if p.InCluster.FabricManager.Deploy && p.AMI.Family.RunsHostFabricManager() {
		bad("fabric-manager-twice", "a fabric-manager DaemonSet on an image that runs fabric manager itself: they conflict")
	}
	return fs
}

// warningCode is a stack warning's finding code, by the key it is about: the cost guard's and
// the metrics' own; every other warning is a quota AWS may refuse without a raise.
func warningCode(w topology.ConfigError) string {
	switch w.Key {
	case topology.KeyObservability:
		return "metrics-during-benchmarks"
	case topology.KeyMaxHourlyCost:
		return "cost-guard-unpriced"
	}
	return "aws-quota"
}
