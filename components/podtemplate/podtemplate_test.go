package podtemplate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpucluster/gpucluster/components/topology"
)

func TestTemplateFollowsTheSpec(t *testing.T) {
	p, _ := topology.BuiltinProfile("p4d-pod-per-gpu")
	p.NCCLEnv = map[string]string{"NCCL_DEBUG": "WARN"}
	spec, err := topology.Derive("gpu", p)
	if err != nil {
		t.Fatal(err)
	}
	tpl := For(spec, "example.com/train:1", map[string]string{"gpucluster.io/owner": "ml-team"})
	pod, c := tpl.Spec, tpl.Spec.Containers[0]
	// One GPU per pod: nothing to share over IPC, so the pod keeps its own namespace.
	if pod.HostIPC || pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirst || pod.NodeSelector[topology.LabelPool] != "gpu" ||
		pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("pod shape %+v", pod)
	}
	if gpu, efa := c.Resources.Limits["nvidia.com/gpu"], c.Resources.Limits["vpc.amazonaws.com/efa"]; gpu.Value() != 1 || efa.Value() != 1 {
		t.Errorf("limits %v", c.Resources.Limits)
	}
	// Guaranteed QoS: CPU and memory requested and limited alike, from the spec (p4d, 4 pods).
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("%s: request %s, limit %s", r, req.String(), lim.String())
		}
	}
	if cpu, mem := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Requests[corev1.ResourceMemory]; cpu.String() != spec.TrainingPod.CPU || mem.String() != spec.TrainingPod.Memory || cpu.String() != "23" {
		t.Errorf("requests %v, spec %s %s", c.Resources.Requests, spec.TrainingPod.CPU, spec.TrainingPod.Memory)
	}
	if c.Image != "example.com/train:1" || len(c.SecurityContext.Capabilities.Add) != 1 || c.SecurityContext.Capabilities.Add[0] != "IPC_LOCK" {
		t.Errorf("container %+v", c)
	}
	shm := pod.Volumes[0].EmptyDir
	if shm.Medium != corev1.StorageMediumMemory || shm.SizeLimit.String() != "64Gi" || c.VolumeMounts[0].MountPath != "/dev/shm" {
		t.Errorf("/dev/shm %+v", shm)
	}
	if c.Env[0].Name != "NCCL_DEBUG" || c.Env[0].Value != "WARN" {
		t.Errorf("env %+v", c.Env)
	}
	if len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "nvidia.com/gpu" || pod.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("tolerations %+v", pod.Tolerations)
	}
	m, err := AsMap(tpl)
	if _, set := m["spec"].(map[string]any)["hostIPC"]; err != nil || set {
		t.Errorf("AsMap %v %v", m, err)
	}
	// Eight GPUs per pod share the node's IPC namespace.
	p, _ = topology.BuiltinProfile("p4d-efa")
	if spec, err = topology.Derive("gpu", p); err != nil {
		t.Fatal(err)
	}
	if m, err = AsMap(For(spec, "example.com/train:1", nil)); err != nil || m["spec"].(map[string]any)["hostIPC"] != true {
		t.Errorf("AsMap of a pod of %d GPUs: %v %v", spec.TrainingPod.GPUsPerPod, m, err)
	}
}
