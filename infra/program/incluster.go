package program

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/deviceplugin"
	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/efacounters"
	"github.com/gpucluster/gpucluster/components/fabricmanager"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/mpioperator"
	"github.com/gpucluster/gpucluster/components/observability"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/trainer"
)

// InCluster is what buildInCluster created.
type InCluster struct {
	Provider       *kubernetes.Provider
	NVIDIA, EFA    *deviceplugin.Plugin
	EFACounters    *efacounters.Reader
	FabricManager  *fabricmanager.FabricManager
	HealthGate     *healthgate.HealthGate
	DRADriver      *dradriver.Driver     // nil without a pool whose NVLink domain spans instances
	Karpenter      *karpenter.Controller // nil without Karpenter pools
	KarpenterPools map[string]*karpenter.Pool
	MPIOperator    *mpioperator.Operator  // nil unless the stack enables benchmarks
	Trainer        *trainer.Trainer       // nil unless the stack enables benchmarks
	Kueue          *kueue.Kueue           // nil unless the stack enables benchmarks
	Metrics        *observability.Metrics // nil unless the stack chooses metrics
}

// buildInCluster deploys the in-cluster pieces the derived spec asks for, through a Kubernetes
// provider bound to the new cluster's kubeconfig.
func buildInCluster(ctx *pulumi.Context, d *Deployment) (*InCluster, error) {
	spec := d.Spec
	tags := spec.Tags()
	in := &InCluster{KarpenterPools: map[string]*karpenter.Pool{}}
	var err error
	// The provider takes the kubeconfig as pulumi-eks writes it, with the stack's AWS profile: it
	// carries no credential (it runs `aws eks get-token`), and an unknown wrapped in a secret
	// cannot be previewed.
	in.Provider, err = kubernetes.NewProvider(ctx, spec.Cluster.Name, &kubernetes.ProviderArgs{Kubeconfig: d.Cluster.ProviderKubeconfig},
		pulumi.Parent(d.Cluster)) // the cluster's own access
	if err != nil {
		return nil, err
	}
	k8s := pulumi.Provider(in.Provider)
	args := deviceplugin.Args{Pools: spec.Pools, Region: spec.Region, Labels: spec.Labels()}
	if in.NVIDIA, err = deviceplugin.NewNVIDIA(ctx, spec.Cluster.Name+"-nvidia-device-plugin", args, k8s); err != nil {
		return nil, err
	}
	if in.EFA, err = deviceplugin.NewEFA(ctx, spec.Cluster.Name+"-efa-device-plugin", args, k8s); err != nil {
		return nil, err
	}
	in.EFACounters, err = efacounters.New(ctx, spec.Cluster.Name+"-efa-counters", efacounters.Args{Pools: spec.Pools, Labels: spec.Labels()}, k8s)
	if err != nil {
		return nil, err
	}
	in.Metrics, err = observability.New(ctx, spec.Cluster.Name+"-metrics", observability.Args{
		Spec: spec.Observability, Pools: spec.Pools, ClusterName: d.Cluster.Name, Cluster: spec.Cluster.Name,
		Tags: tags, Labels: spec.Labels(), K8s: in.Provider, PodIdentityAgent: d.Cluster.PodIdentityAgent,
		Needs: append([]pulumi.Resource{d.Cluster.SystemNodes}, d.Network.Egress...),
	})
	if err != nil {
		return nil, err
	}
	in.FabricManager, err = fabricmanager.New(ctx, spec.Cluster.Name+"-fabricmanager",
		fabricmanager.Args{Pools: spec.Pools, DriverVersion: spec.NVIDIADriverVersion, Image: spec.FabricManagerImage, Labels: spec.Labels()}, k8s)
	if err != nil {
		return nil, err
	}
	in.HealthGate, err = healthgate.New(ctx, spec.Cluster.Name+"-health-gate", healthgate.Args{Pools: spec.Pools, Labels: spec.Labels()}, k8s)
	if err != nil {
		return nil, err
	}
	in.DRADriver, err = dradriver.New(ctx, spec.Cluster.Name+"-dra-driver", dradriver.Args{
		Pools: spec.Pools, Labels: spec.Labels(), Cluster: d.Cluster.EKS,
		Needs: append([]pulumi.Resource{d.Cluster.SystemNodes}, d.Network.Egress...),
	}, in.Provider)
	if err != nil {
		return nil, err
	}
	if spec.Benchmarks.Enabled {
		in.MPIOperator, err = mpioperator.New(ctx, spec.Cluster.Name+"-mpi-operator",
			mpioperator.Args{Labels: spec.Labels(), Needs: append([]pulumi.Resource{d.Cluster.SystemNodes}, d.Network.Egress...)}, in.Provider)
		if err != nil {
			return nil, err
		}
		// One operator after another, Kueue last (it integrates MPIJobs and TrainJobs). Every
		// create `pulumi up` waits on holds one of the engine's workers (`--parallel`, 4 per CPU
		// by default: 8 on 2 CPUs) until it is ready, and a chart's Deployments and Services are
		// ready only once their controller runs, which needs the chart's CRDs. The provider
		// registers a chart's children at once, the small ones first: in the real-engine tier
		// the Kueue and Trainer charts' Deployments and Services, created side by side, held all
		// 8 workers while the CRDs their controllers wait for (Kueue's Workload, JobSet's, the
		// Trainer's) queued behind them, and `up` failed after 8 minutes. One chart at a time
		// waits on at most 5 (the Trainer's: its and JobSet's Deployment and 3 Services).
		in.Trainer, err = trainer.New(ctx, spec.Cluster.Name+"-trainer", trainer.Args{
			Pools: spec.Pools, Labels: spec.Labels(), Cluster: d.Cluster.EKS,
			Needs: append([]pulumi.Resource{d.Cluster.SystemNodes, in.MPIOperator.Controller}, d.Network.Egress...),
		}, in.Provider)
		if err != nil {
			return nil, err
		}
		in.Kueue, err = kueue.New(ctx, spec.Cluster.Name+"-kueue", kueue.Args{OperatorArgs: k8sargs.OperatorArgs{
			Pools: spec.Pools, Labels: spec.Labels(), Cluster: d.Cluster.EKS,
			Needs: append([]pulumi.Resource{d.Cluster.SystemNodes, in.Trainer.Chart}, d.Network.Egress...),
		}, Replicas: spec.Cluster.SystemNodes.KueueReplicas()}, in.Provider)
		if err != nil {
			return nil, err
		}
	}
	for _, pool := range spec.Pools {
		if pool.Provisioner != topology.ProvisionerKarpenter {
			continue
		}
		if in.Karpenter == nil {
			in.Karpenter, err = karpenter.New(ctx, spec.Cluster.Name+"-karpenter", karpenter.Args{
				ClusterName: d.Cluster.Name, Cluster: spec.Cluster.Name, Region: spec.Region, Tags: tags, K8s: in.Provider,
				Replicas: spec.Cluster.SystemNodes.KarpenterReplicas(), NodeRepair: spec.KarpenterNodeRepair(), PodIdentityAgent: d.Cluster.PodIdentityAgent,
				Needs: append([]pulumi.Resource{d.Cluster.SystemNodes}, d.Network.Egress...),
			})
			if err != nil {
				return nil, err
			}
		}
		placementGroup := pool.Placement.Group // the reservation's own group, when it has one
		if placementGroup == "" && pool.Placement.Strategy != topology.PlacementNone {
			placementGroup = topology.PoolResourceName(spec.Cluster.Name, pool.Name) // the NodePool component's group
		}
		in.KarpenterPools[pool.Name], err = karpenter.NewPool(ctx, topology.PoolResourceName(spec.Cluster.Name, pool.Name)+"-karpenter", karpenter.PoolArgs{
			Spec: pool, Cluster: spec.Cluster.Name, NodeRoleName: in.Karpenter.NodeRoleName, PlacementGroupName: placementGroup,
			Tags: tags, Controller: in.Karpenter, K8s: in.Provider,
			Needs:  append(append(append([]pulumi.Resource{}, d.Pools[pool.Name].Uses...), d.Cluster.NodeAccess...), d.Network.Egress...),
			Labels: spec.Labels(),
		})
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}
