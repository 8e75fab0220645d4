package kubeapi

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSchedulerBindsByResources: the real scheduler places a pod on the node whose allocatable
// holds its extended resources, and leaves a pod asking for hugepages no node offers unbound,
// saying so.
func TestSchedulerBindsByResources(t *testing.T) {
	s := StartForTest(t)
	if err := s.StartScheduler(); err != nil {
		t.Fatal(err)
	}
	must(t, s.Create(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": "default"}}))
	for i, gpus := range []string{"0", "8"} {
		must(t, s.CreateReadyNode(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": fmt.Sprintf("node-%d", i)},
			"status": map[string]any{
				"capacity":    map[string]any{"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": gpus},
				"allocatable": map[string]any{"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": gpus},
			}}))
	}
	pod := func(name string, limits map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "default"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox",
				"resources": map[string]any{"limits": limits, "requests": limits}}}}}
	}
	must(t, s.Create(pod("gpu", map[string]any{"nvidia.com/gpu": "8", "cpu": "1", "memory": "1Gi"})))
	must(t, s.Create(pod("hugepages", map[string]any{"hugepages-2Mi": "5120Mi", "cpu": "1", "memory": "1Gi"})))
	got, err := s.WaitBound("default", []string{"gpu", "hugepages"}, 2, 60*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got["gpu"].Node != "node-1" {
		t.Errorf("the 8-GPU pod went to %+v, want node-1", got["gpu"])
	}
	if got["hugepages"].Node != "" || !strings.Contains(got["hugepages"].Reason, "Insufficient hugepages-2Mi") {
		t.Errorf("the hugepages pod: %+v, want unbound for lack of hugepages", got["hugepages"])
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
