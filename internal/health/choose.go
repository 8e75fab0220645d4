// Package health runs `gpucluster health`: on-demand deep checks of a stack's GPU nodes that no
// job holds (DCGM diagnostics, an all-reduce inside each node, and on EFA pools an all-reduce
// over pairs of nodes), as batch Jobs and MPIJobs pinned to the nodes. While a node is checked
// it carries the health gate's taint, so no job lands there; a node that fails keeps it and gets
// the gate's failure label and a Warning event with the evidence; every other node is given
// back as it was. It reaches the cluster with kubectl, as verify and bench run do.
package health

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Node is what health reads of a Node object.
type Node struct {
	Metadata struct {
		Name            string            `json:"name"`
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool             `json:"unschedulable"`
		Taints        []topology.Taint `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// Pod is what health reads of a Pod object: where it runs and what it holds.
type Pod struct {
	Metadata struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace"`
		OwnerReferences []struct {
			Kind string `json:"kind"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		NodeName       string `json:"nodeName"`
		ResourceClaims []any  `json:"resourceClaims"`
		Containers     []struct {
			Resources struct {
				Requests map[string]string `json:"requests"`
				Limits   map[string]string `json:"limits"`
			} `json:"resources"`
		} `json:"containers"`
	} `json:"spec"`
	Status struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// holdsGPUs says whether a pod that has not ended holds GPUs on its node: a GPU request, or a
// device claim (DRA), in a pod that is not a node agent's (a DaemonSet's pods are the node's
// own, the health gate and the device plugins among them).
func (p Pod) holdsGPUs() bool {
	if p.Status.Phase == "Succeeded" || p.Status.Phase == "Failed" {
		return false
	}
	for _, o := range p.Metadata.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return false
		}
	}
	if len(p.Spec.ResourceClaims) > 0 {
		return true
	}
	for _, c := range p.Spec.Containers {
		for _, m := range []map[string]string{c.Resources.Requests, c.Resources.Limits} {
			if q, ok := m[topology.ResourceGPU]; ok && q != "0" {
				return true
			}
		}
	}
	return false
}

func (n Node) name() string { return n.Metadata.Name }

func (n Node) ready() bool {
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

func (n Node) hasTaint(t topology.Taint) bool { return n.taintIndex(t) >= 0 }

// taintIndex is where the node's taints hold t (its key and effect), -1 where they do not.
func (n Node) taintIndex(t topology.Taint) int {
	return slices.IndexFunc(n.Spec.Taints, func(x topology.Taint) bool { return x.Key == t.Key && x.Effect == t.Effect })
}

// Target is a node the run checks, with its pool.
type Target struct {
	Node string
	Pool topology.PoolSpec
	// Again: the node carries the failure of an earlier run's check (or the taint of a run that
	// could not finish); a pass gives it back to service.
	Again bool
	// FailedBefore: an earlier run's check failed it (it carries that check's label).
	FailedBefore bool
}

// Skip is a node of the stack the run leaves alone, and why.
type Skip struct {
	Node, Pool, Why string
}

// Choose decides, node by node, which of the stack's GPU nodes (those of its pools, or of the
// pools named) the run checks: never one whose GPUs a pod holds, one the gate has not passed or
// has failed, one out of service (cordoned, not Ready).
func Choose(stack topology.StackSpec, pools []string, nodes []Node, pods []Pod) ([]Target, []Skip) {
	busy := map[string]string{}
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.holdsGPUs() && busy[p.Spec.NodeName] == "" {
			busy[p.Spec.NodeName] = p.Metadata.Namespace + "/" + p.Metadata.Name
		}
	}
	var targets []Target
	var skips []Skip
	for _, n := range nodes {
		pool, ok := stack.Pool(n.Metadata.Labels[topology.LabelPool])
		if !ok || (len(pools) > 0 && !slices.Contains(pools, pool.Name)) {
			continue
		}
		skip := func(format string, a ...any) {
			skips = append(skips, Skip{Node: n.name(), Pool: pool.Name, Why: fmt.Sprintf(format, a...)})
		}
		failed, labelled := n.Metadata.Labels[topology.LabelHealthFailed]
		ours := n.Metadata.Annotations[topology.LabelHealthRun] != ""
		switch {
		case !n.ready():
			skip("not Ready")
		case n.Spec.Unschedulable:
			skip("cordoned: taken out of service by someone else")
		case labelled && !topology.IsDeepHealthCheck(failed):
			skip("failed its health gate's %s check (the gate's event on the node says why; the gate checks it again when its pod restarts)", failed)
		case n.hasTaint(topology.HealthTaint) && !labelled && !ours:
			skip("its health gate has not passed yet")
		case busy[n.name()] != "":
			skip("busy: pod %s holds its GPUs", busy[n.name()])
		default:
			targets = append(targets, Target{Node: n.name(), Pool: pool, Again: labelled || ours, FailedBefore: labelled})
		}
	}
	return targets, skips
}

// Pairs are the pairs of a pool's nodes the pair check runs on, in rounds whose pairs share no
// node (they run at once): each node with the next, by name; an odd one out is paired, in a
// round of its own, with the first node.
func Pairs(nodes []string) [][][2]string {
	nodes = slices.Sorted(slices.Values(nodes))
	if len(nodes) < 2 {
		return nil
	}
	var first [][2]string
	for i := 0; i+1 < len(nodes); i += 2 {
		first = append(first, [2]string{nodes[i], nodes[i+1]})
	}
	rounds := [][][2]string{first}
	if len(nodes)%2 == 1 {
		rounds = append(rounds, [][2]string{{nodes[len(nodes)-1], nodes[0]}})
	}
	return rounds
}

// pairName is a pair as people read it.
func pairName(p [2]string) string { return strings.Join(p[:], " + ") }
