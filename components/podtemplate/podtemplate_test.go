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
	tpl := For(spec, "example.com/train:1")
	pod, c := tpl.Spec, tpl.Spec.Containers[0]
	if !pod.HostIPC || pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirst || pod.NodeSelector[topology.LabelPool] != "gpu" {
		t.Errorf("pod shape %+v", pod)
	}
	if gpu, efa := c.Resources.Limits["nvidia.com/gpu"], c.Resources.Limits["vpc.amazonaws.com/efa"]; gpu.Value() != 1 || efa.Value() != 1 {
		t.Errorf("limits %v", c.Resources.Limits)
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
	if err != nil || m["spec"].(map[string]any)["hostIPC"] != true {
		t.Errorf("AsMap %v %v", m, err)
	}
}
