package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Span is where a run's pods ran in EC2's network: on how many nodes, under how many network
// nodes of each layer (EKS labels each node topology.k8s.aws/network-node-layer-<n> from EC2's
// instance topology). A log does not say: NCCL names pods, not nodes. The job's pods and the
// cluster's nodes do, as `kubectl get -o json` prints them.
type Span struct {
	Pods  int `json:"pods"`
	Nodes int `json:"nodes"`
	// NetworkNodes[i] is how many layer-(i+1) network nodes the run's nodes are under, for each
	// layer that every one of them carries; empty when they carry none (the type reports no
	// topology, or the nodes were not given with their labels).
	NetworkNodes []int `json:"networkNodes,omitempty"`
}

// object is the part of a Pod or Node the span needs.
type object struct {
	Kind     string
	Metadata struct {
		Name   string
		Labels map[string]string
	}
	Spec struct{ NodeName string }
	// Items are a List's objects (kubectl get with several objects).
	Items []object
}

// ReadSpan reads a run's pods and the nodes they ran on from `kubectl get pods -o json` and
// `kubectl get nodes -o json` outputs (Lists or single objects, in any number of inputs, named
// for errors). Every pod must be bound to a node given.
func ReadSpan(inputs map[string]io.Reader) (*Span, error) {
	var pods, nodes []object
	names := make([]string, 0, len(inputs))
	for name := range inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var o object
		if err := json.NewDecoder(inputs[name]).Decode(&o); err != nil {
			return nil, fmt.Errorf("%s: not kubectl's JSON (kubectl get … -o json): %v", name, err)
		}
		all := o.Items
		if o.Kind != "List" {
			all = []object{o}
		}
		for _, x := range all {
			switch x.Kind {
			case "Pod":
				pods = append(pods, x)
			case "Node":
				nodes = append(nodes, x)
			}
		}
	}
	if len(pods) == 0 {
		return nil, fmt.Errorf("%v: no pod: give the job's pods (kubectl get pods -l <the job's label> -o json)", names)
	}
	labels := map[string]map[string]string{}
	for _, n := range nodes {
		labels[n.Metadata.Name] = n.Metadata.Labels
	}
	used := map[string]bool{}
	for _, p := range pods {
		node := p.Spec.NodeName
		if node == "" {
			return nil, fmt.Errorf("pod %s is on no node: it never ran", p.Metadata.Name)
		}
		if labels[node] == nil {
			return nil, fmt.Errorf("pod %s ran on node %s, which the input does not hold: add kubectl get nodes -o json", p.Metadata.Name, node)
		}
		used[node] = true
	}
	s := &Span{Pods: len(pods), Nodes: len(used)}
	for layer := 1; ; layer++ {
		key := fmt.Sprintf("%s%d", topology.LabelNetworkNodeLayerPrefix, layer)
		distinct := map[string]bool{}
		for node := range used {
			v, ok := labels[node][key]
			if !ok {
				return s, nil
			}
			distinct[v] = true
		}
		s.NetworkNodes = append(s.NetworkNodes, len(distinct))
	}
}

// String says it for a reader: "8 pods on 2 nodes under 1 layer-3 network node(s), 1 of layer
// 2, 1 of layer 1".
func (s *Span) String() string {
	out := fmt.Sprintf("%d pods on %d nodes", s.Pods, s.Nodes)
	if n := len(s.NetworkNodes); n > 0 {
		out += fmt.Sprintf(" under %d layer-%d network node(s)", s.NetworkNodes[n-1], n)
		for i := n - 2; i >= 0; i-- {
			out += fmt.Sprintf(", %d of layer %d", s.NetworkNodes[i], i+1)
		}
	} else {
		out += ", no network-node labels"
	}
	return out
}
