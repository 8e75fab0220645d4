// Package verify compares a live cluster with the spec its stack derives: pool by pool and node
// by node, what the nodes registered (type, zone, labels, taints, allocatable GPUs and EFA
// devices), the node agents' pods, and the controllers' objects (Karpenter, Kueue, the DRA
// driver's ComputeDomains). It only reads: the cluster is read with `kubectl get`, and nothing
// is written.
package verify

import "time"

// Cluster is what verify reads of a live cluster, in the API's own JSON shapes (the fields it
// uses, nothing else).
type Cluster struct {
	Nodes []Node // the nodes that carry gpucluster.io/pool (any pool)
	// Pods are the node agents' pods (AgentNames), wherever they run.
	Pods []Pod
	// Objects are the controllers' objects by resource (ResourceNodePools, …).
	Objects map[string][]Object
	// Unserved are the resources the API server does not serve (their CRD is not installed).
	Unserved []string
}

// Resources verify reads besides nodes and pods, as kubectl names them (plural.group).
const (
	ResourceNodePools      = "nodepools.karpenter.sh"
	ResourceNodeClasses    = "ec2nodeclasses.karpenter.k8s.aws"
	ResourceClusterQueues  = "clusterqueues.kueue.x-k8s.io"
	ResourceComputeDomains = "computedomains.resource.nvidia.com"
)

// Meta is the metadata verify reads.
type Meta struct {
	Name              string            `json:"name"`
	Namespace         string            `json:"namespace,omitempty"`
	Labels            map[string]string `json:"labels,omitempty"`
	DeletionTimestamp *time.Time        `json:"deletionTimestamp,omitempty"`
}

// Condition is a status condition (metav1.Condition and the core API's node and pod conditions
// share these fields).
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Taint is a node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Node is a Node object.
type Node struct {
	Metadata Meta `json:"metadata"`
	Spec     struct {
		Taints []Taint `json:"taints,omitempty"`
	} `json:"spec"`
	Status struct {
		Allocatable map[string]string `json:"allocatable,omitempty"`
		Conditions  []Condition       `json:"conditions,omitempty"`
	} `json:"status"`
}

// Pod is a Pod object.
type Pod struct {
	Metadata Meta `json:"metadata"`
	Spec     struct {
		NodeName string `json:"nodeName,omitempty"`
	} `json:"spec"`
	Status struct {
		Phase      string      `json:"phase,omitempty"`
		Conditions []Condition `json:"conditions,omitempty"`
	} `json:"status"`
}

// Object is a controller's object: its conditions, and the ComputeDomain's status word.
type Object struct {
	Metadata Meta `json:"metadata"`
	Status   struct {
		Conditions []Condition `json:"conditions,omitempty"`
		Status     string      `json:"status,omitempty"`
	} `json:"status"`
}

// condition is the condition of that type ("" status when there is none).
func condition(cs []Condition, typ string) Condition {
	for _, c := range cs {
		if c.Type == typ {
			return c
		}
	}
	return Condition{Type: typ}
}

// Ready is the node's Ready condition.
func (n Node) Ready() Condition { return condition(n.Status.Conditions, "Ready") }

// Ready is the pod's Ready condition.
func (p Pod) Ready() Condition { return condition(p.Status.Conditions, "Ready") }
