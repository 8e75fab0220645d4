package dradriver

import (
	"reflect"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// TestValuesTolerateEveryPoolsTaintsOnce: the kubelet plugin must run on every UltraServer pool's
// nodes, so it tolerates each pool's taints and startup taints (the health gate's), written out here as the chart's
// kubeletPlugin.tolerations takes them (a Kubernetes Toleration): a value only where the pool's
// toleration has one (Exists has none), and a toleration two pools share once.
func TestValuesTolerateEveryPoolsTaintsOnce(t *testing.T) {
	gpu := topology.Toleration{Key: "nvidia.com/gpu", Operator: "Exists", Effect: "NoSchedule"}
	team := topology.Toleration{Key: "example.com/team", Operator: "Equal", Value: "research", Effect: "NoExecute"}
	health := []topology.Taint{{Key: "gpucluster.io/health", Value: "checking", Effect: "NoSchedule"}}
	pools := []topology.PoolSpec{
		{Name: "nvl-a", Tolerations: []topology.Toleration{gpu}, StartupTaints: health},
		{Name: "nvl-b", Tolerations: []topology.Toleration{gpu, team}, StartupTaints: health},
	}
	plugin := Values(pools)["kubeletPlugin"].(map[string]any)
	want := []any{
		map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
		map[string]any{"key": "gpucluster.io/health", "operator": "Equal", "value": "checking", "effect": "NoSchedule"},
		map[string]any{"key": "example.com/team", "operator": "Equal", "value": "research", "effect": "NoExecute"},
	}
	if !reflect.DeepEqual(plugin["tolerations"], want) {
		t.Errorf("tolerations %v\nwant %v", plugin["tolerations"], want)
	}
	terms := plugin["affinity"].(map[string]any)["nodeAffinity"].(map[string]any)["requiredDuringSchedulingIgnoredDuringExecution"].(map[string]any)["nodeSelectorTerms"]
	wantTerms := []any{map[string]any{"matchExpressions": []any{
		map[string]any{"key": "gpucluster.io/pool", "operator": "In", "values": []any{"nvl-a", "nvl-b"}},
	}}}
	if !reflect.DeepEqual(terms, wantTerms) {
		t.Errorf("kubelet plugin node selector terms %v\nwant %v", terms, wantTerms)
	}
}
