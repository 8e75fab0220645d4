// Package trainer installs Kubeflow Trainer, which runs the training jobs (TrainJob,
// trainer.kubeflow.org/v1alpha1): the release's Helm chart at a pinned version, with the JobSet
// controller it depends on (the chart's own dependency), both on the system nodes; the
// ClusterTrainingRuntimes the pools' training pods run on; and the service account those pods
// use, which mounts no token.
package trainer

import (
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	helmv4 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/helm/v4"
	metav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// The pinned release. Its chart (charts/kubeflow-trainer in the release) installs the CRDs,
// the controller manager with its webhooks, and JobSet at the version the release requires.
const (
	Version       = "v2.3.0"
	ChartRef      = "oci://ghcr.io/kubeflow/charts/kubeflow-trainer"
	ChartVersion  = "2.3.0"
	JobSetVersion = "v0.12.0"
	// Namespace is where the release installs itself (manifests/overlays/manager).
	Namespace = "kubeflow-system"
	// RuntimeImage is the image of the release's torch-distributed runtime
	// (manifests/base/runtimes/torch_distributed.yaml); every TrainJob overrides it with the
	// stack's training image.
	RuntimeImage = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime"
)

// Args configure the Trainer.
type Args = k8sargs.OperatorArgs

// Trainer is the gpucluster:index:Trainer component.
type Trainer struct {
	pulumi.ResourceState

	Version pulumi.StringOutput `pulumi:"version"`
	// Chart is the release: the runtimes depend on it (its webhook validates them).
	Chart *helmv4.Chart
}

// New installs the Trainer, JobSet, the pools' runtimes and the training service account.
func New(ctx *pulumi.Context, name string, args Args, k8s pulumi.ProviderResource, opts ...pulumi.ResourceOption) (*Trainer, error) {
	t := &Trainer{}
	props := pulumi.Map{"version": pulumi.String(Version), "jobSetVersion": pulumi.String(JobSetVersion)}
	if err := ctx.RegisterComponentResourceV2("gpucluster:index:Trainer", name, props, t, opts...); err != nil {
		return nil, err
	}
	t.Version = pulumi.String(Version).ToStringOutput()
	child := []pulumi.ResourceOption{pulumi.Parent(t), pulumi.Provider(k8s)}
	system := pulumi.Map{topology.LabelPool: pulumi.String(topology.SystemPool)}
	var err error
	t.Chart, err = k8sargs.ReleaseChart(ctx, name, Namespace, ChartRef, ChartVersion, pulumi.Map{
		// Controllers on the system nodes: never on a GPU node a job holds.
		"manager": pulumi.Map{"nodeSelector": system},
		"jobset":  pulumi.Map{"controller": pulumi.Map{"nodeSelector": system}},
		// The chart's runtimes are applied by a hook Job that downloads kubectl at start;
		// gpucluster creates the runtimes its pools use itself, below.
		"runtimes": pulumi.Map{"defaultEnabled": pulumi.Bool(false)},
	}, args, child...)
	if err != nil {
		return nil, err
	}
	for _, rt := range Runtimes(args.Pools, args.Labels) {
		// Nothing outside the cluster depends on a runtime, so it goes with the cluster. No
		// finalizer holds it: Trainer v2.3.0 sets none, its runtime controllers only remove the
		// resource-in-use finalizer earlier releases set
		// (pkg/controller/clustertrainingruntime_controller.go).
		if _, err := apiextensions.NewCustomResource(ctx, name+"-"+rt.Name, &apiextensions.CustomResourceArgs{
			ApiVersion:  pulumi.String(topology.TrainerAPIVersion),
			Kind:        pulumi.String("ClusterTrainingRuntime"),
			Metadata:    &metav1.ObjectMetaArgs{Name: pulumi.String(rt.Name), Labels: pulumi.ToStringMap(rt.Labels)},
			OtherFields: kubernetes.UntypedArgs{"spec": rt.Spec},
		}, append(child, pulumi.DependsOn([]pulumi.Resource{t.Chart}), pulumi.DeletedWith(args.Cluster))...); err != nil {
			return nil, err
		}
	}
	no := false
	if _, err := corev1.NewServiceAccount(ctx, name+"-training-sa", &corev1.ServiceAccountArgs{
		Metadata:                     k8sargs.Metadata(topology.TrainingServiceAccount, topology.BenchmarkNamespace, args.Labels),
		AutomountServiceAccountToken: pulumi.BoolPtr(no),
	}, child...); err != nil {
		return nil, err
	}
	return t, ctx.RegisterResourceOutputs(t, pulumi.Map{"version": t.Version})
}

// Runtime is one ClusterTrainingRuntime.
type Runtime struct {
	Name   string
	Labels map[string]string
	Spec   map[string]any
}

// Runtimes are the ClusterTrainingRuntimes the pools' training pods run on
// (topology.TrainingRuntimeFor), each once: the release's torch-distributed runtime as it
// ships, and the same with hostIPC for pods that hold several GPUs.
func Runtimes(pools []topology.PoolSpec, labels map[string]string) []Runtime {
	var out []Runtime
	seen := map[string]bool{}
	for _, p := range pools {
		name, _ := topology.TrainingRuntimeFor(p.TrainingPod)
		if seen[name] {
			continue
		}
		seen[name] = true
		pod := map[string]any{"containers": []any{map[string]any{"name": topology.TrainerContainer, "image": RuntimeImage}}}
		if name == topology.TrainingRuntimeHostIPC {
			pod["hostIPC"] = true
		}
		out = append(out, Runtime{
			Name:   name,
			Labels: k8sargs.Merge(map[string]string{"trainer.kubeflow.org/framework": "torch"}, labels),
			Spec: map[string]any{
				"mlPolicy": map[string]any{"numNodes": 1, "torch": map[string]any{}},
				"template": map[string]any{"spec": map[string]any{"replicatedJobs": []any{map[string]any{
					"name": topology.TrainerReplicatedJob,
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
						"spec":     map[string]any{"template": map[string]any{"spec": pod}},
					},
				}}}},
			},
		})
	}
	return out
}
