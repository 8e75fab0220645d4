package benchjobs

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpucluster/gpucluster/components/jsonmap"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/podtemplate"
	"github.com/gpucluster/gpucluster/components/topology"
)

// The jobs `gpucluster health` creates on one node or a pair, in Namespace, each pinned to its
// nodes and tolerating the HealthTaint the run puts on them meanwhile (so that no other job
// lands there). Like the benchmark jobs they are not Pulumi resources: the CLI creates them,
// reads their logs and deletes them.

// Containers of the health jobs, by which their logs are found.
const (
	DiagContainer      = "dcgm-diag"
	AllReduceContainer = "all-reduce"
)

// HealthJob is one check on one node: a batch Job of one pod, never retried (a check that
// fails has found what it looks for), bounded by deadline, its pod holding every GPU of the
// node.
type HealthJob struct {
	Stack    topology.StackSpec
	Pool     topology.PoolSpec
	Node     string
	Name     string
	Run      string
	Check    string // topology.HealthCheckDiag or HealthCheckNodeAllReduce
	Deadline int    // seconds
	Level    int    // the diagnostics' level (HealthCheckDiag)
}

// Object is the Job as plain JSON values.
func (h HealthJob) Object() (map[string]any, error) {
	pod := h.pod()
	zero := int32(0)
	deadline := int64(h.Deadline)
	keep := int32(topology.HealthJobKeepSeconds)
	job := batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: h.Name, Namespace: Namespace, Labels: pod.Labels},
		Spec: batchv1.JobSpec{BackoffLimit: &zero, ActiveDeadlineSeconds: &deadline, TTLSecondsAfterFinished: &keep,
			Template: pod},
	}
	return jsonmap.Of(job)
}

func (h HealthJob) pod() corev1.PodTemplateSpec {
	labels := healthLabels(h.Stack, h.Pool, h.Run, h.Check)
	gpus := corev1.ResourceList{corev1.ResourceName(topology.ResourceGPU): *resource.NewQuantity(int64(h.Pool.Instance.GPUCount), resource.DecimalSI)}
	// The training pod: its node selection and tolerations, and for the all-reduce the rest.
	t := podtemplate.For(h.Pool, h.Stack.TrainingImage, nil)
	t.Spec.ResourceClaims = nil
	if h.Check == topology.HealthCheckDiag {
		privileged, no := topology.DiagPrivileged, false
		t.Spec = corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			NodeSelector:                 t.Spec.NodeSelector,
			Tolerations:                  t.Spec.Tolerations,
			Containers: []corev1.Container{{
				Name: DiagContainer, Image: topology.DCGMImage, Command: topology.DiagCommand(h.Pool, h.Level),
				Resources:       corev1.ResourceRequirements{Limits: gpus},
				SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			}},
		}
	} else {
		// Every GPU of the node and no EFA device: the traffic stays on NVLink.
		c := &t.Spec.Containers[0]
		c.Name, c.Command, c.Args = AllReduceContainer, topology.NodeAllReduceCommand(h.Pool), nil
		c.Resources.Claims = nil
		for name := range c.Resources.Limits {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				delete(c.Resources.Limits, name)
			}
		}
		c.Resources.Limits[corev1.ResourceName(topology.ResourceGPU)] = gpus[corev1.ResourceName(topology.ResourceGPU)]
	}
	t.Labels = labels
	t.Annotations = map[string]string{AnnotationDoNotDisrupt: "true"}
	t.Spec.RestartPolicy = corev1.RestartPolicyNever
	pinTo(&t.Spec, h.Node)
	return t
}

// PairJob is the pool's all-reduce MPIJob on two nodes, outside its Kueue queue (Kueue would
// place it by quota, and the pair is chosen by node): name, its two nodes, and the run.
func PairJob(stack topology.StackSpec, pool topology.PoolSpec, name string, nodes [2]string, run string) (map[string]any, error) {
	j := topology.PairNCCLJob(pool, name)
	if j == nil {
		return nil, fmt.Errorf("pool %s has no benchmark jobs: the pair check runs the pool's all-reduce job, which comes with gpucluster:benchmarks", pool.Name)
	}
	b := *pool.Benchmark
	b.NCCL, b.Queue, b.Train = *j, nil, nil
	pool.Benchmark = &b
	m := NCCLTest(stack, pool).(mpiJob)
	m.Metadata.Labels = k8sargs.Merge(m.Metadata.Labels, healthLabels(stack, pool, run, topology.HealthCheckPairAllReduce))
	for role, r := range m.Spec.MPIReplicaSpecs {
		r.Template.Labels = k8sargs.Merge(r.Template.Labels, healthLabels(stack, pool, run, topology.HealthCheckPairAllReduce))
		if role == "Worker" {
			pinTo(&r.Template.Spec, nodes[:]...)
		}
		m.Spec.MPIReplicaSpecs[role] = r
	}
	return jsonmap.Of(m)
}

// pinTo keeps a pod on the named nodes (by name, as the DaemonSet controller pins its pods:
// one term per node, since the API takes one value for a field's In) and lets it past the
// run's HealthTaint there.
func pinTo(spec *corev1.PodSpec, nodes ...string) {
	var terms []corev1.NodeSelectorTerm
	for _, n := range nodes {
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n},
		}}})
	}
	spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	t := topology.HealthTaint
	spec.Tolerations = append(spec.Tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
}

func healthLabels(stack topology.StackSpec, pool topology.PoolSpec, run, check string) map[string]string {
	return k8sargs.Merge(map[string]string{topology.LabelPool: pool.Name, "app.kubernetes.io/part-of": "gpucluster", "app.kubernetes.io/component": "health",
		topology.LabelHealthRun: run, topology.LabelHealthCheck: check}, stack.Labels())
}
