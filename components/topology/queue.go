package topology

import (
	"fmt"
)

// Kueue's names that the queue objects (the kueue component) and the jobs (benchjobs) share:
// Kueue v0.19.2's storage version (config/components/crd/bases) and pod-template annotations
// (apis/kueue/v1beta2/topology_types.go).
const (
	KueueAPIVersion = "kueue.x-k8s.io/v1beta2"
	// LabelQueueName puts a job in a LocalQueue; Kueue suspends it until it admits it whole.
	LabelQueueName = "kueue.x-k8s.io/queue-name"
	// AnnotationPreferredTopology asks Kueue to place a pod set under as few domains of the
	// level as it can; AnnotationSliceRequiredTopology with AnnotationSliceSize keeps each
	// slice of that many pods in one domain.
	AnnotationPreferredTopology     = "kueue.x-k8s.io/podset-preferred-topology"
	AnnotationSliceRequiredTopology = "kueue.x-k8s.io/podset-slice-required-topology"
	AnnotationSliceSize             = "kueue.x-k8s.io/podset-slice-size"
	// SystemFlavor is the ResourceFlavor of the system nodes, where MPI launchers run.
	SystemFlavor = SystemPool
)

// ResourceIMEXChannel is the quota resource Kueue counts a pod's claim on its ComputeDomain's
// IMEX channel as: Kueue's configuration maps the channel's DeviceClass to it
// (resources.deviceClassMappings; Kueue v0.19.2 apis/config/v1beta2 DeviceClassMapping, counted
// by pkg/dra claims.go for an ExactCount request, which the DRA driver's workload claim
// template is: one device of the class, the default count).
const ResourceIMEXChannel = "nvidia.com/imex-channel"

// Node labels of the network topology. EKS labels each node with its network nodes, from the
// broadest (layer 1) to the closest (layer 3, or 4 on four-layer types), from EC2's instance
// topology (Amazon EKS user guide, "Place distributed AI/ML workloads with network topology
// labels", ml-workload-topology). The control plane's AWS cloud controller manager sets them when
// it initializes a node of a p, trn or hpc type, whoever launched it, managed node groups
// included (kubernetes/cloud-provider-aws pkg/providers/v1 instances_v2.go and topology.go), with
// ec2:DescribeInstanceTopology, which the cluster role's AmazonEKSClusterPolicy grants (AWS
// managed policy reference, policy version 8 and later).
const (
	LabelNetworkNodeLayerPrefix = "topology.k8s.aws/network-node-layer-"
	LabelHostname               = "kubernetes.io/hostname"
	// packingLayer is the layer jobs are packed under: the closest layer every supported type
	// has (the and EKS's recommendation for Kueue).
	packingLayer = 3
)

// LauncherCPU and LauncherMemory are what an MPI launcher requests on a system node: mpirun
// and ssh, no GPU. The launcher's quota in each pool's queue is one launcher.
const (
	LauncherCPU    = "500m"
	LauncherMemory = "1Gi"
)

// JobQueue is how Kueue admits a pool's jobs: a ClusterQueue and a LocalQueue of the pool's
// name, whose quota is what the pool's nodes offer, so that a job that cannot have every node
// it asks for waits whole in the queue instead of holding part of the pool.
type JobQueue struct {
	// Name is the LocalQueue (in the jobs' namespace) and the ClusterQueue.
	Name string `json:"name"`
	// Flavor is the pool's ResourceFlavor: its node labels and taints.
	Flavor string `json:"flavor"`
	// Quota is the pool's nodes' allocatable GPUs, EFA devices (EFA pools only), CPU and memory,
	// in Kubernetes quantities: the resources the queue covers. SystemQuota is one MPI launcher
	// on the system nodes (CPU and memory; none of the others).
	Quota       map[string]string `json:"quota"`
	SystemQuota map[string]string `json:"systemQuota"`
	// Topology is the Kueue Topology the flavor places pods by (nil: quota only), and
	// Placement says what the jobs get and why.
	Topology  *QueueTopology `json:"topology,omitempty"`
	Placement string         `json:"placement"`
}

// QueueTopology is topology-aware placement of a pool's jobs.
type QueueTopology struct {
	// Name and Levels are the Kueue Topology: the network-node layers of the pool's type,
	// broadest first, then the node.
	Name   string   `json:"name"`
	Levels []string `json:"levels"`
	// Preferred is the level a job's pods are packed under (as few of its domains as fit).
	Preferred string `json:"preferred"`
	// SliceLevel and SliceSize keep each node's pods on one node (pod-per-GPU layouts).
	SliceLevel string `json:"sliceLevel,omitempty"`
	SliceSize  int    `json:"sliceSize,omitempty"`
}

// queueTopologyName is the Kueue Topology of instance types with that many network-node layers.
func queueTopologyName(layers int) string { return fmt.Sprintf("aws-network-%d-layers", layers) }

// deriveQueue derives a pool's queue. Topology-aware placement needs Node objects: Kueue counts
// the capacity of the nodes that exist and carry every level's label, and admits nothing
// beyond. A managed node group's nodes exist before any job; a Karpenter pool launches its nodes
// for pending pods, which Kueue never creates while it finds no capacity (its TAS design names
// autoscaling without ProvisioningRequest, which Karpenter does not implement, a non-goal), so
// Karpenter pools get quota only, and Karpenter provisions what Kueue admits.
func deriveQueue(p PoolSpec, nodes int) *JobQueue {
	cpu, mem := nodeAllocatable(p.Instance)
	q := &JobQueue{Name: p.Name, Flavor: p.Name,
		Quota: map[string]string{
			ResourceGPU: fmt.Sprint(nodes * p.Instance.GPUCount),
			"cpu":       fmt.Sprintf("%dm", nodes*int(cpu)), "memory": fmt.Sprintf("%dMi", nodes*int(mem)),
		},
		SystemQuota: map[string]string{"cpu": LauncherCPU, "memory": LauncherMemory},
	}
	if p.Network.EFAInterfaces > 0 {
		q.Quota[ResourceEFA] = fmt.Sprint(nodes * p.Network.EFAInterfaces)
	}
	if p.TrainingPod.ComputeDomain != nil {
		q.Quota[ResourceIMEXChannel] = fmt.Sprint(nodes * p.TrainingPod.PodsPerNode)
	}
	layers := p.Instance.NetworkNodeLayers
	switch {
	case p.TrainingPod.ComputeDomain != nil:
		q.Placement = fmt.Sprintf("admitted whole on quota (%d nodes' worth, each pod with its IMEX channel claim counted as %s); no topology-aware placement: "+
			"the pool is one UltraServer, one NVLink domain, so every node of it is as close as any other", nodes, ResourceIMEXChannel)
	case p.Provisioner == ProvisionerKarpenter:
		q.Placement = fmt.Sprintf("admitted on quota (%d nodes' worth, the NodePool's limit); Karpenter launches the nodes for the admitted pods, "+
			"in the pool's placement group. No topology-aware placement: Kueue places only on nodes that exist", nodes)
	case layers == 0:
		q.Placement = fmt.Sprintf("admitted on quota (%d nodes' worth); %s reports no EC2 instance topology, so nodes carry no network-node labels to pack by",
			nodes, p.Instance.Name)
	default:
		t := &QueueTopology{Name: queueTopologyName(layers), Preferred: LabelNetworkNodeLayerPrefix + fmt.Sprint(packingLayer)}
		for l := 1; l <= layers; l++ {
			t.Levels = append(t.Levels, LabelNetworkNodeLayerPrefix+fmt.Sprint(l))
		}
		t.Levels = append(t.Levels, LabelHostname)
		q.Placement = fmt.Sprintf("admitted whole onto the pool's nodes, packed under as few layer-%d network nodes as fit (%s)", packingLayer, t.Preferred)
		if p.TrainingPod.PodsPerNode > 1 {
			t.SliceLevel, t.SliceSize = LabelHostname, p.TrainingPod.PodsPerNode
			q.Placement += fmt.Sprintf(", each node's %d pods together on one node", t.SliceSize)
		}
		q.Topology = t
	}
	return q
}
