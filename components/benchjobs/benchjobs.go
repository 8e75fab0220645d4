// Package benchjobs renders a pool's benchmark jobs (topology.PoolBenchmark) as Kubernetes
// objects: the NCCL all-reduce MPIJob (kubeflow.org/v2beta1, run by the MPI operator) and the
// torchrun TrainJob (trainer.kubeflow.org/v1alpha1, run by Kubeflow Trainer), both in the
// pool's Kueue queue. They are not Pulumi resources: a benchmark runs when someone applies it,
// not at every `pulumi up` (a Job cannot be updated, and Pulumi would wait for it). They are
// stack outputs and plan-bundle manifests instead.
package benchjobs

import (
	"fmt"

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

// LabelJobSetName is the label JobSet puts on every pod of a TrainJob (the Trainer runs each
// TrainJob as a JobSet of its name): how to find the training pods.
const LabelJobSetName = "jobset.sigs.k8s.io/jobset-name"

// MPIJobAPIVersion is the MPI operator's API the all-reduce job is written in.
const MPIJobAPIVersion = "kubeflow.org/v2beta1"

// MPIJobObjects are the kinds of object an all-reduce run is made of in Namespace: the MPIJob,
// the launcher's Job and the pods the MPI operator makes for it, and Kueue's Workload. Deleting
// the MPIJob takes the rest with it (their owner references).
var MPIJobObjects = []map[string]any{
	{"apiVersion": MPIJobAPIVersion, "kind": "MPIJob"}, {"apiVersion": "batch/v1", "kind": "Job"},
	{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": topology.KueueAPIVersion, "kind": "Workload"},
}

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

// Objects are a pool's benchmark objects, as plain JSON values; nil when the pool has no benchmark.
func Objects(stack topology.StackSpec, pool topology.PoolSpec) ([]map[string]any, error) {
	b := pool.Benchmark
	if b == nil {
		return nil, nil
	}
	var out []map[string]any
	values := []any{NCCLTest(stack, pool)}
	if b.Train != nil {
		values = append(values, Training(stack, pool))
	}
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
	if j.EFACounters {
		exchangeWithReader(&worker.Spec)
	}
	annotate(&worker, b)
	return mpiJob{
		APIVersion: MPIJobAPIVersion, Kind: "MPIJob",
		Metadata: objectMeta{Name: j.Name, Namespace: Namespace, Labels: queued(jobLabels(pool, labels), b)},
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
	if j.EFACounters { // what the launcher pipes to each worker before and after mpirun
		env = append(env, requestScriptEnv())
	}
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(topology.LauncherCPU), corev1.ResourceMemory: resource.MustParse(topology.LauncherMemory)}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: jobLabels(pool, labels)},
		Spec: corev1.PodSpec{
			// mpirun reaches the workers by ssh; the MPI operator, not the launcher, watches the
			// job: no service-account token is mounted.
			AutomountServiceAccountToken: &noToken,
			NodeSelector:                 map[string]string{topology.LabelPool: topology.SystemPool},
			Containers: []corev1.Container{{
				Name: "launcher", Image: j.Image, Command: []string{"bash", "-c", WaitForWorkers, "wait-for-workers"}, Args: j.Command, Env: env,
				Resources:       corev1.ResourceRequirements{Requests: res, Limits: corev1.ResourceList{corev1.ResourceMemory: res[corev1.ResourceMemory]}},
				SecurityContext: launcherSecurity(),
			}},
		},
	}
}

// WaitForWorkers is what the launcher runs before mpirun (its arguments, run with exec): it waits
// until ssh reaches every worker of the hostfile the MPI operator mounts, with the operator's own
// ssh options. launcherCreationPolicy WaitForWorkersReady does not hold under Kueue: the MPI
// operator v0.8.2 creates the launcher Job while the MPIJob is suspended (no worker exists, so
// "all ready" holds), and unsuspends it in the sync that creates the workers
// (kubeflow/mpi-operator#615, open; pkg/controller/mpi_job_controller.go). mpirun would then
// fail at once on workers still pulling their image, and the launcher's few retries would fail
// the job. The job's deadline bounds the wait.
const WaitForWorkers = `hostfile=${OMPI_MCA_orte_default_hostfile:-/etc/mpi/hostfile}
for host in $(cut -d' ' -f1 "$hostfile"); do
  until ssh -o BatchMode=yes -o ConnectTimeout=5 ${OMPI_MCA_plm_rsh_args:-} "$host" true; do
    echo "waiting for worker $host to answer ssh"; sleep "${WORKER_POLL_SECONDS:-5}"
  done
done
exec "$@"`

// exchangeWithReader mounts the host directory where a worker asks the node's EFA counters
// reader for a reading and finds its answer (topology.EFACountersDir).
func exchangeWithReader(spec *corev1.PodSpec) {
	create := corev1.HostPathDirectoryOrCreate
	spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "efa-counters",
		VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: topology.EFACountersDir, Type: &create}}})
	c := &spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "efa-counters", MountPath: topology.EFACountersDir})
}

// requestScriptEnv carries the request for a reading (topology.EFACountersRequestEnv).
func requestScriptEnv() corev1.EnvVar {
	return corev1.EnvVar{Name: topology.EFACountersRequestEnv, Value: topology.EFACountersRequestScript()}
}

// launcherSecurity is all the launcher's mpirun and ssh client need: no capability, no privilege
// escalation, the runtime's default seccomp profile. It stays root, as the image's user: the MPI
// operator mounts the ssh key under /root/.ssh, readable by root only, and mpirun runs as root
// (--allow-run-as-root). Its root filesystem stays writable: mpirun writes its session
// directory under /tmp.
func launcherSecurity() *corev1.SecurityContext {
	no := false
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// TrainJob field names of trainer.kubeflow.org/v1alpha1 that gpucluster writes; like the MPIJob,
// the Trainer's Go types are not imported, and the tests create these objects in a
// kube-apiserver with the release's CRDs and webhooks.
type trainJob struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   objectMeta   `json:"metadata"`
	Spec       trainJobSpec `json:"spec"`
}

type trainJobSpec struct {
	RuntimeRef            runtimeRef     `json:"runtimeRef"`
	ActiveDeadlineSeconds int            `json:"activeDeadlineSeconds"`
	Trainer               trainer        `json:"trainer"`
	RuntimePatches        []runtimePatch `json:"runtimePatches"`
}

type runtimeRef struct {
	Name string `json:"name"`
}

type trainer struct {
	Image            string                      `json:"image"`
	Command          []string                    `json:"command"`
	Env              []corev1.EnvVar             `json:"env,omitempty"`
	NumNodes         int                         `json:"numNodes"`
	NumProcPerNode   int                         `json:"numProcPerNode"`
	ResourcesPerNode corev1.ResourceRequirements `json:"resourcesPerNode"`
}

// runtimePatch is the patch shape of v2.2+ (TrainingRuntimeSpecPatch): per replicated job, the
// pod template's metadata and the pod fields a manager may set.
type runtimePatch struct {
	Manager             string `json:"manager"`
	TrainingRuntimeSpec struct {
		Template struct {
			Spec struct {
				ReplicatedJobs []replicatedJobPatch `json:"replicatedJobs"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"trainingRuntimeSpec"`
}

type replicatedJobPatch struct {
	Name     string `json:"name"`
	Template struct {
		Spec struct {
			Template struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
				Spec     podSpecPatch      `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	} `json:"template"`
}

type podSpecPatch struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	NodeSelector       map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations        []corev1.Toleration `json:"tolerations,omitempty"`
	Volumes            []corev1.Volume     `json:"volumes"`
	Containers         []containerPatch    `json:"containers"`
}

type containerPatch struct {
	Name            string                  `json:"name"`
	VolumeMounts    []corev1.VolumeMount    `json:"volumeMounts"`
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// Training is the pool's torchrun run as a Kubeflow Trainer TrainJob on the pool's runtime
// (topology.TrainingRuntimeFor). The training pod's shape reaches it through the Trainer's own
// fields (image, command, env, resources per node) and gpucluster's runtime patch (the pod's
// labels and annotations, node selection, tolerations, /dev/shm, the EFA counters' exchange
// directory, IPC_LOCK and the service account that mounts no token); PET_* come from the
// Trainer, never from gpucluster.
func Training(stack topology.StackSpec, pool topology.PoolSpec) any {
	b := pool.Benchmark
	t := b.Train
	labels := stack.Labels()
	pod := podtemplate.For(pool, stack.TrainingImage, labels)
	annotate(&pod, b)
	if t.EFACounters { // each pod asks its node's reader before and after torchrun
		exchangeWithReader(&pod.Spec)
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, requestScriptEnv())
	}
	c := pod.Spec.Containers[0]
	var patch runtimePatch
	patch.Manager = topology.TrainerPatchManager
	rj := replicatedJobPatch{Name: topology.TrainerReplicatedJob}
	tpl := &rj.Template.Spec.Template
	tpl.Metadata = metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations}
	tpl.Spec = podSpecPatch{
		ServiceAccountName: topology.TrainingServiceAccount,
		NodeSelector:       pod.Spec.NodeSelector, Tolerations: pod.Spec.Tolerations, Volumes: pod.Spec.Volumes,
		Containers: []containerPatch{{Name: topology.TrainerContainer, VolumeMounts: c.VolumeMounts, SecurityContext: c.SecurityContext}},
	}
	patch.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs = []replicatedJobPatch{rj}
	return trainJob{
		APIVersion: topology.TrainerAPIVersion, Kind: "TrainJob",
		Metadata: objectMeta{Name: t.Name, Namespace: Namespace, Labels: queued(jobLabels(pool, labels), b)},
		Spec: trainJobSpec{
			RuntimeRef:            runtimeRef{Name: t.Runtime},
			ActiveDeadlineSeconds: t.DeadlineSeconds,
			Trainer: trainer{
				Image: stack.TrainingImage, Command: t.Command, Env: c.Env,
				NumNodes: t.NumNodes, NumProcPerNode: t.ProcsPerNode, ResourcesPerNode: c.Resources,
			},
			RuntimePatches: []runtimePatch{patch},
		},
	}
}

// annotate gives the pods of a job's GPU pod set what Kueue and Karpenter read from them: where
// Kueue places them (its topology-aware placement, when the pool's queue has a Topology), and
// that Karpenter must not disrupt a node while they run.
func annotate(t *corev1.PodTemplateSpec, b *topology.PoolBenchmark) {
	a := map[string]string{}
	if b.DoNotDisrupt {
		a[AnnotationDoNotDisrupt] = "true"
	}
	if b.Queue != nil && b.Queue.Topology != nil { // no queue, no placement (PoolBenchmark.Queue)
		tp := b.Queue.Topology
		a[topology.AnnotationPreferredTopology] = tp.Preferred
		if tp.SliceSize > 0 {
			a[topology.AnnotationSliceRequiredTopology] = tp.SliceLevel
			a[topology.AnnotationSliceSize] = fmt.Sprint(tp.SliceSize)
		}
	}
	if len(a) > 0 {
		t.Annotations = k8sargs.Merge(t.Annotations, a)
	}
}

// queued puts a job in its pool's queue: Kueue holds it, suspended, until it can admit all of it.
// Only the job carries the label; its pods belong to it.
func queued(labels map[string]string, b *topology.PoolBenchmark) map[string]string {
	if b.Queue == nil {
		return labels // topology.PoolBenchmark.Queue says why
	}
	return k8sargs.Merge(labels, map[string]string{topology.LabelQueueName: b.Queue.Name})
}

func jobLabels(pool topology.PoolSpec, stack map[string]string) map[string]string {
	return k8sargs.Merge(map[string]string{topology.LabelPool: pool.Name, "app.kubernetes.io/part-of": "gpucluster", "app.kubernetes.io/component": "benchmark"}, stack)
}
