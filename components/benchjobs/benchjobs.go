// Package benchjobs renders a pool's benchmark jobs (topology.PoolBenchmark) as Kubernetes
// objects: the NCCL all-reduce MPIJob (kubeflow.org/v2beta1, run by the MPI operator) and the
// torchrun training Job with its headless rendezvous Service. They are not Pulumi resources: a
// benchmark runs when someone applies it, not at every `pulumi up` (a Job cannot be updated,
// and Pulumi would wait for it). They are stack outputs and plan-bundle manifests instead.
package benchjobs

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpucluster/gpucluster/components/jsonmap"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/podtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// Namespace is where the jobs run.
const Namespace = topology.BenchmarkNamespace

// AnnotationDoNotDisrupt keeps Karpenter from consolidating, expiring or replacing a node while
// a pod carrying it runs (Karpenter's disruption controls).
const AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"

// LabelJobName is the label the Job controller puts on every pod of a Job (Kubernetes ≥ 1.27).
const LabelJobName = "batch.kubernetes.io/job-name"

// MPIJob field names of kubeflow.org/v2beta1 that gpucluster writes. The operator's Go types are
// not imported (they pull its controller, client-go and volcano's APIs); the tests create these
// objects in a kube-apiserver with the operator's real CRD, with strict field validation.
type mpiJob struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       mpiJobSpec `json:"spec"`
}

type objectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace"`
	Labels    map[string]string `json:"labels"`
}

type mpiJobSpec struct {
	SlotsPerWorker         int                    `json:"slotsPerWorker"`
	LauncherCreationPolicy string                 `json:"launcherCreationPolicy"`
	MPIImplementation      string                 `json:"mpiImplementation"`
	RunPolicy              runPolicy              `json:"runPolicy"`
	MPIReplicaSpecs        map[string]replicaSpec `json:"mpiReplicaSpecs"`
}

type runPolicy struct {
	CleanPodPolicy          string `json:"cleanPodPolicy"`
	TTLSecondsAfterFinished int    `json:"ttlSecondsAfterFinished"`
	ActiveDeadlineSeconds   int    `json:"activeDeadlineSeconds"`
	BackoffLimit            int    `json:"backoffLimit"`
}

type replicaSpec struct {
	Replicas      int                    `json:"replicas"`
	RestartPolicy string                 `json:"restartPolicy,omitempty"`
	Template      corev1.PodTemplateSpec `json:"template"`
}

// Objects are a pool's benchmark objects in the order they apply (a Service before the pods
// that resolve it), as plain JSON values; nil when the pool has no benchmark.
func Objects(stack topology.StackSpec, pool topology.PoolSpec) ([]map[string]any, error) {
	b := pool.Benchmark
	if b == nil {
		return nil, nil
	}
	values := []any{NCCLTest(stack, pool)}
	if b.Train != nil {
		svc, job := Training(stack, pool)
		values = append(values, svc, job)
	}
	var out []map[string]any
	for _, v := range values {
		m, err := jsonmap.Of(v)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// List wraps objects in a v1 List: one document `kubectl apply -f -` takes.
func List(objects []map[string]any) map[string]any {
	items := make([]any, len(objects))
	for i, o := range objects {
		items[i] = o
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// NCCLTest is the pool's all-reduce MPIJob. Workers are the pool's training pods (all the
// node's GPUs and EFA devices, or one of each per pod in the pod-per-GPU layout); mpirun in the
// launcher starts once every worker is ready; finished workers go at once, the launcher and its
// log after KeepFinishedSeconds.
func NCCLTest(stack topology.StackSpec, pool topology.PoolSpec) any {
	b := pool.Benchmark
	j := b.NCCL
	labels := stack.Labels()
	worker := podtemplate.For(pool, j.Image, labels)
	worker.Spec.Containers[0].Name = "worker" // the operator runs sshd in it
	worker.Spec.Containers[0].Env = nil       // ranks get theirs from mpirun -x
	protect(&worker, b)
	return mpiJob{
		APIVersion: "kubeflow.org/v2beta1", Kind: "MPIJob",
		Metadata: objectMeta{Name: j.Name, Namespace: Namespace, Labels: jobLabels(pool, labels)},
		Spec: mpiJobSpec{
			SlotsPerWorker: j.SlotsPerWorker, LauncherCreationPolicy: "WaitForWorkersReady", MPIImplementation: "OpenMPI",
			RunPolicy: runPolicy{CleanPodPolicy: "Running", TTLSecondsAfterFinished: j.KeepFinishedSeconds,
				ActiveDeadlineSeconds: j.DeadlineSeconds, BackoffLimit: j.Retries},
			MPIReplicaSpecs: map[string]replicaSpec{
				"Launcher": {Replicas: 1, RestartPolicy: "OnFailure", Template: launcher(pool, j, labels)},
				"Worker":   {Replicas: j.Workers, Template: worker},
			},
		},
	}
}

var noToken = false

// launcher runs mpirun on a system node: it needs no GPU, and keeps none from a worker.
func launcher(pool topology.PoolSpec, j topology.NCCLTestJob, labels map[string]string) corev1.PodTemplateSpec {
	var env []corev1.EnvVar
	for _, e := range j.Env {
		env = append(env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: jobLabels(pool, labels)},
		Spec: corev1.PodSpec{
			// mpirun reaches the workers by ssh; the MPI operator, not the launcher, watches the
			// job: no service-account token is mounted.
			AutomountServiceAccountToken: &noToken,
			NodeSelector:                 map[string]string{topology.LabelPool: topology.SystemPool},
			Containers: []corev1.Container{{
				Name: "launcher", Image: j.Image, Command: j.Command, Env: env,
				Resources: corev1.ResourceRequirements{Requests: res, Limits: corev1.ResourceList{corev1.ResourceMemory: res[corev1.ResourceMemory]}},
			}},
		},
	}
}

// Training is the pool's torchrun Job and the headless Service its pods resolve each other by:
// an Indexed Job names pod i "<job>-i" in the Service's subdomain, so every rank reaches the
// rendezvous on pod 0 by name.
func Training(stack topology.StackSpec, pool topology.PoolSpec) (corev1.Service, batchv1.Job) {
	b := pool.Benchmark
	t := b.Train
	labels := stack.Labels()
	meta := metav1.ObjectMeta{Name: t.Name, Namespace: Namespace, Labels: jobLabels(pool, labels)}
	svc := corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{LabelJobName: t.Name},
			// Ranks resolve pod 0 while it starts, before any readiness.
			PublishNotReadyAddresses: true,
			Ports:                    []corev1.ServicePort{{Name: "rendezvous", Port: topology.RendezvousPort}},
		},
	}
	pod := podtemplate.For(pool, stack.TrainingImage, labels)
	pod.Spec.Subdomain = t.Service
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Containers[0].Command = t.Command
	pod.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "rendezvous", ContainerPort: topology.RendezvousPort}}
	protect(&pod, b)
	pods := int32(t.Pods)
	indexed := batchv1.IndexedCompletion
	noRetry := int32(0) // a lost rank fails the run; torchrun's own restarts are the place to retry
	deadline, keep := int64(t.DeadlineSeconds), int32(t.KeepFinishedSeconds)
	job := batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			Completions: &pods, Parallelism: &pods, CompletionMode: &indexed, BackoffLimit: &noRetry,
			ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &keep, Template: pod,
		},
	}
	return svc, job
}

// protect asks Karpenter not to disrupt a node while the pod runs on it.
func protect(t *corev1.PodTemplateSpec, b *topology.PoolBenchmark) {
	if !b.DoNotDisrupt {
		return
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[AnnotationDoNotDisrupt] = "true"
}

func jobLabels(pool topology.PoolSpec, stack map[string]string) map[string]string {
	return k8sargs.Merge(map[string]string{topology.LabelPool: pool.Name, "app.kubernetes.io/part-of": "gpucluster", "app.kubernetes.io/component": "benchmark"}, stack)
}
