package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// writePool prints a derived pool spec for a person: the same facts as the JSON, in reading order.
func writePool(w io.Writer, s topology.PoolSpec) {
	it := s.Instance
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-14s %s\n", label, fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "pool %s (profile %s)\n", s.Name, s.Profile)
	if s.Description != "" {
		fmt.Fprintf(w, "  %s\n", s.Description)
	}
	line("instance", "%s: %d x %s %d GB, %d vCPU, %d GiB, %s", it.Name, it.GPUCount, it.GPUModel, it.GPUMemoryGiB, it.VCPUs, it.MemoryGiB, it.InterconnectDescription())
	line("nodes", "%s (%s), capacity %s%s, AMI %s%s", s.Scaling.String(), s.Provisioner, s.Capacity.Type,
		prefixed(" ", s.Capacity.ReservationID), s.AMI.Family, prefixed(" ", s.AMI.ID))
	if s.Provisioner == topology.ProvisionerKarpenter {
		line("gpu limit", "%d GPUs", s.Scaling.GPULimit)
	}
	zones := "the VPC's first zone, when a stack uses the profile"
	if len(s.AvailabilityZones) > 0 {
		zones = strings.Join(s.AvailabilityZones, ", ")
	}
	line("zones", "%s", zones)
	line("placement", "%s: %s", s.Placement.Strategy, s.Placement.Reason)
	line("fabric", "%s, %d EFA, %d interfaces", s.Network.Fabric, s.Network.EFAInterfaces, len(s.Network.Interfaces))
	line("interfaces", "%s", interfaceSummary(s.Network.Interfaces))
	if len(s.Network.EFASecurityGroup) > 0 {
		var rules []string
		for _, r := range s.Network.EFASecurityGroup {
			rules = append(rules, r.Direction+" all self")
		}
		line("efa sg", "%s", strings.Join(rules, ", "))
	}
	line("nvidia plugin", "%s", decision(s.InCluster.NVIDIADevicePlugin))
	line("efa plugin", "%s", decision(s.InCluster.EFADevicePlugin))
	fm := s.InCluster.FabricManager
	line("fabric mgr", "%s: %s", fm.RunBy, fm.Reason)
	if s.InCluster.DRADriver.Deploy {
		line("dra driver", "%s", decision(s.InCluster.DRADriver))
	}
	line("labels", "%s", mapString(s.Labels))
	var taints []string
	for _, t := range s.Taints {
		taints = append(taints, fmt.Sprintf("%s=%s:%s", t.Key, t.Value, t.Effect))
	}
	line("taints", "%s", strings.Join(taints, ", "))
	var tols []string
	for _, t := range s.Tolerations {
		tols = append(tols, fmt.Sprintf("%s %s %s %s", t.Key, t.Operator, t.Value, t.Effect))
	}
	line("tolerations", "%s", strings.Join(tols, "; "))

	pod := s.TrainingPod
	if cd := pod.ComputeDomain; cd != nil {
		line("compute domain", "%s (claim template %s, %d nodes): the training pod claims its IMEX channel; a job of its own creates its own", cd.Name, cd.ClaimTemplate, cd.NumNodes)
	}
	line("training pod", "%s: %d pod(s)/node x %d GPU x %d EFA, hostIPC, %s, /dev/shm %s",
		pod.Layout, pod.PodsPerNode, pod.GPUsPerPod, pod.EFAPerPod, strings.Join(pod.Capabilities, ","), pod.ShmSize)
	line("pod resources", "%s", intMapString(pod.Resources))
	for _, e := range pod.Env {
		line("pod env", "%s=%s (%s)", e.Name, e.Value, e.Source)
	}
	if len(pod.PluginManagedEnv) > 0 {
		line("left to plugin", "%s (aws-ofi-nccl sets these)", strings.Join(pod.PluginManagedEnv, ", "))
	}
	line("nccl intra", "%s: %s", s.NCCL.IntraNode.Class, s.NCCL.IntraNode.Reason)
	line("nccl inter", "%s: %s", s.NCCL.InterNode.Class, s.NCCL.InterNode.Reason)
	line("bandwidth", "%g of %d Gbps per node: %s", s.NCCL.ExpectedInterNodeGbps, s.NCCL.PhysicalMaxGbps, s.NCCL.BandwidthNote)
	for _, f := range s.Findings {
		line(f.Severity, "%s: %s", f.Code, f.Message)
	}
}

// interfaceSummary compacts runs of cards with the same layout: "card 0: interface@0 efa-only@1;
// cards 1-31: efa-only@0".
func interfaceSummary(nics []topology.NetworkInterface) string {
	perCard := map[int][]string{}
	var cards []int
	for _, n := range nics {
		if _, seen := perCard[n.NetworkCardIndex]; !seen {
			cards = append(cards, n.NetworkCardIndex)
		}
		perCard[n.NetworkCardIndex] = append(perCard[n.NetworkCardIndex], fmt.Sprintf("%s@%d", n.InterfaceType, n.DeviceIndex))
	}
	sort.Ints(cards)
	var parts []string
	for i := 0; i < len(cards); {
		j := i
		layout := strings.Join(perCard[cards[i]], " ")
		for j+1 < len(cards) && cards[j+1] == cards[j]+1 && strings.Join(perCard[cards[j+1]], " ") == layout {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprintf("card %d: %s", cards[i], layout))
		} else {
			parts = append(parts, fmt.Sprintf("cards %d-%d: %s", cards[i], cards[j], layout))
		}
		i = j + 1
	}
	return strings.Join(parts, "; ")
}

func decision(d topology.Decision) string {
	if d.Deploy {
		return "deploy: " + d.Reason
	}
	return "skip: " + d.Reason
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

func mapString(m map[string]string) string { return joinSorted(m, "%s=%s") }

func intMapString(m map[string]int) string { return joinSorted(m, "%s: %d") }

// joinSorted formats a map's entries in key order, comma-separated.
func joinSorted[V any](m map[string]V, format string) string {
	keys := topology.SortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(format, k, m[k])
	}
	return strings.Join(parts, ", ")
}

// writeStackSummary prints what a stack is as `plan` summarises it: where, the cluster, its
// pools, what it costs and when it stops.
func writeStackSummary(w io.Writer, s topology.StackSpec) {
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-10s %s\n", label, fmt.Sprintf(format, args...))
	}
	line("region", "%s", s.Region)
	line("cluster", "%s, EKS %s, %d × %s system node(s)", s.Cluster.Name, s.Cluster.KubernetesVersion, s.Cluster.SystemNodes.Count, s.Cluster.SystemNodes.InstanceType)
	for _, p := range s.Pools {
		line("pool", "%s: %s × %s (profile %s, %s, %s)", p.Name, p.Scaling.String(), p.Instance.Name, p.Profile, p.Provisioner, p.Capacity.Type)
	}
	cost := topology.EstimateCost(s, s.At)
	floor := ""
	if !cost.Complete {
		floor = "at least "
	}
	line("cost", "%s$%.2f/h after pulumi up, %s$%.2f/h at every pool's maximum (us-east-1 list prices)", floor, cost.AtDeploy, floor, cost.AtMost)
	for _, r := range cost.Reserved {
		line("", "+ %s: billed by its reservation, not in these totals", r.Item)
	}
	switch at := s.ExpiresAt(); {
	case at.IsZero():
		line("expiry", "none: the GPU pools run until pulumi destroy (gpucluster expire --stack %s --in 8h sets one)", s.Stack)
	case s.Expired(s.At):
		line("expiry", "%s UTC, passed: pulumi up keeps every GPU pool at zero nodes until it is extended (gpucluster expire --stack %s --in 8h)", at.Format("2006-01-02 15:04"), s.Stack)
	default:
		line("expiry", "%s UTC (in %s): every GPU pool goes to zero nodes then", at.Format("2006-01-02 15:04"), at.Sub(s.At).Round(time.Minute))
	}
	if len(s.Warnings) > 0 {
		line("warnings", "%d (above)", len(s.Warnings))
	}
}
