// Package podtemplate renders a pool's derived training pod as a Kubernetes PodTemplateSpec:
// the shape users copy into their Job, PyTorchJob or MPIJob.
package podtemplate

import (
	"github.com/gpucluster/gpucluster/components/jsonmap"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpucluster/gpucluster/components/topology"
)

// ContainerName is the training container's name.
const ContainerName = "train"

// For renders the training pod template of a pool; labels are the stack's ownership and
// lifecycle labels, carried by every pod made from it.
func For(pool topology.PoolSpec, image string, labels map[string]string) corev1.PodTemplateSpec {
	pod := pool.TrainingPod
	// CPU and memory requested and limited alike make the pod Guaranteed: the last evicted.
	requests := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(pod.CPU), corev1.ResourceMemory: resource.MustParse(pod.Memory)}
	limits := requests.DeepCopy()
	for name, n := range pod.Resources {
		limits[corev1.ResourceName(name)] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	var env []corev1.EnvVar
	for _, e := range pod.Env {
		env = append(env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	var tolerations []corev1.Toleration
	for _, t := range pod.Tolerations {
		tolerations = append(tolerations, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOperator(t.Operator), Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
	}
	var caps []corev1.Capability
	for _, c := range pod.Capabilities {
		caps = append(caps, corev1.Capability(c))
	}
	shm := resource.NewQuantity(pod.ShmSizeBytes, resource.BinarySI)
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: podLabels(pool, labels)},
		Spec: corev1.PodSpec{
			// Nothing in a training pod calls the Kubernetes API (torchrun meets its ranks over the
			// job's Service; mpirun reaches the workers by ssh): no service-account token is mounted.
			AutomountServiceAccountToken: ptr(false),
			HostIPC:                      pod.HostIPC,
			HostNetwork:                  pod.HostNetwork,
			DNSPolicy:                    corev1.DNSPolicy(pod.DNSPolicy),
			NodeSelector:                 pod.NodeSelector,
			Tolerations:                  tolerations,
			Containers: []corev1.Container{{
				Name:  ContainerName,
				Image: image,
				Env:   env,
				// Extended resources must have requests equal to limits; limits alone imply them.
				Resources:       corev1.ResourceRequirements{Requests: requests, Limits: limits},
				SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: caps}},
				VolumeMounts:    []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}},
			}},
			Volumes: []corev1.Volume{{
				Name:         "dshm",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: shm}},
			}},
		},
	}
	if cd := pod.ComputeDomain; cd != nil {
		claimComputeDomain(&t, cd.ClaimTemplate)
	}
	return t
}

// claimComputeDomain has the pod claim its IMEX channel from a ComputeDomain's
// ResourceClaimTemplate, and the training container use it: on an UltraServer, the channel is
// what lets its GPUs reach the other nodes' over NVLink.
func claimComputeDomain(t *corev1.PodTemplateSpec, claimTemplate string) {
	t.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: topology.ComputeDomainClaim, ResourceClaimTemplateName: ptr(claimTemplate)}}
	c := &t.Spec.Containers[0]
	c.Resources.Claims = []corev1.ResourceClaim{{Name: topology.ComputeDomainClaim}}
}

func ptr[T any](v T) *T { return &v }

// AsMap is the template as plain JSON values, for a stack output.
func AsMap(t corev1.PodTemplateSpec) (map[string]any, error) { return jsonmap.Of(t) }

func podLabels(pool topology.PoolSpec, stack map[string]string) map[string]string {
	l := map[string]string{topology.LabelPool: pool.Name, "app.kubernetes.io/part-of": "gpucluster"}
	for k, v := range stack {
		l[k] = v
	}
	return l
}
