package verify

import "github.com/gpucluster/gpucluster/components/topology"

// Finding is one way the live cluster differs from the spec.
type Finding struct {
	Severity string `json:"severity"` // topology.SeverityError or SeverityWarning
	Code     string `json:"code"`
	Pool     string `json:"pool,omitempty"`
	Node     string `json:"node,omitempty"`
	// Object is the controller's object the finding is about ("NodePool gpucluster-dev-gpu").
	Object  string `json:"object,omitempty"`
	Message string `json:"message"` // what differs: what the cluster has and what the spec says
	Fix     string `json:"fix"`
}

// PoolState is what the cluster has of one pool.
type PoolState struct {
	Name        string `json:"name"`
	Instance    string `json:"instance"`
	Provisioner string `json:"provisioner"`
	// Planned is the node count the spec plans ("2"; "0-4" for a Karpenter pool, which launches
	// nodes for pending pods); Nodes the nodes that carry the pool's label.
	Planned string   `json:"planned"`
	Nodes   []string `json:"nodes"`
}

// Report is the verdict on one cluster against one stack.
type Report struct {
	Stack    string      `json:"stack"`
	Source   string      `json:"source"` // the stack file
	Pools    []PoolState `json:"pools"`
	Findings []Finding   `json:"findings"`
	Errors   int         `json:"errors"`
	Warnings int         `json:"warnings"`
}

// Finding codes: one per way a cluster differs from its spec.
const (
	CodeNotInstalled       = "not-installed"
	CodeNodeCount          = "node-count"
	CodeNodeNotReady       = "node-not-ready"
	CodeInstanceType       = "instance-type"
	CodeZone               = "zone"
	CodeLabel              = "label"
	CodeTaint              = "taint"
	CodeStartupTaint       = "startup-taint"
	CodeHealthFailed       = "health-check-failed"
	CodeGPUAllocatable     = "gpu-allocatable"
	CodeEFAAllocatable     = "efa-allocatable"
	CodeTrainingPodsUnfit  = "training-pods-unfit"
	CodeAgentMissing       = "agent-missing"
	CodeAgentNotReady      = "agent-not-ready"
	CodeNetworkNodeLabels  = "network-node-labels"
	CodeNodePoolNotReady   = "nodepool-not-ready"
	CodeNodeClassNotReady  = "nodeclass-not-ready"
	CodeQueueInactive      = "clusterqueue-inactive"
	CodeComputeDomainReady = "computedomain-not-ready"
	CodeUnknownPool        = "unknown-pool"
)

// Codes are every finding code with what it means, for the docs (docs/cli.md "verify").
var Codes = []struct{ Code, Severity, Means string }{
	{CodeNotInstalled, topology.SeverityError, "the API server does not serve a resource the stack's controllers use (Karpenter, Kueue, the DRA driver): its CRD is not installed"},
	{CodeNodeCount, topology.SeverityError, "a pool has fewer or more nodes than planned (a managed node group's desired size, a Karpenter pool's limit)"},
	{CodeNodeNotReady, topology.SeverityError, "a pool's node is not Ready"},
	{CodeInstanceType, topology.SeverityError, "a node carries the pool's label but is another instance type"},
	{CodeZone, topology.SeverityError, "a node is outside the pool's availability zones"},
	{CodeLabel, topology.SeverityError, "a node lacks one of the pool's labels, or has another value"},
	{CodeTaint, topology.SeverityError, "a node lacks one of the pool's taints"},
	{CodeStartupTaint, topology.SeverityError, "a node still has its health taint: its health gate has not passed yet (on NVSwitch nodes it waits for fabric manager), so jobs do not start there"},
	{CodeHealthFailed, topology.SeverityError, "a node failed its health gate (gpucluster.io/health-failed names the check): it keeps its health taint and takes no job"},
	{CodeGPUAllocatable, topology.SeverityError, "a node's allocatable nvidia.com/gpu differs from the instance's GPU count"},
	{CodeEFAAllocatable, topology.SeverityError, "a node's allocatable vpc.amazonaws.com/efa differs from the pool's EFA interfaces"},
	{CodeTrainingPodsUnfit, topology.SeverityError, "a node's allocatable CPU or memory is less than its pool's training pods request (the plan assumes EKS's own reservations): no job of the pool ever starts there"},
	{CodeAgentMissing, topology.SeverityError, "a node runs no pod of an agent its pool deploys (device plugins, fabric manager, the health gate, the EFA counters reader)"},
	{CodeAgentNotReady, topology.SeverityError, "a node's agent pod is not Ready"},
	{CodeNetworkNodeLabels, topology.SeverityError, "a node lacks the EKS network-node labels its pool's Kueue queue places jobs by"},
	{CodeNodePoolNotReady, topology.SeverityError, "a Karpenter pool's NodePool is missing or not Ready"},
	{CodeNodeClassNotReady, topology.SeverityError, "a Karpenter pool's EC2NodeClass is missing or not Ready"},
	{CodeQueueInactive, topology.SeverityError, "a pool's Kueue ClusterQueue is missing or not Active: it admits nothing"},
	{CodeComputeDomainReady, topology.SeverityError, "an UltraServer pool's ComputeDomain is missing or not Ready: its jobs get no IMEX channel"},
	{CodeUnknownPool, topology.SeverityWarning, "a node carries gpucluster.io/pool of a pool the stack does not have"},
}
