package healthlive

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/exitcode"
	"github.com/gpucluster/gpucluster/internal/verify"
	"github.com/gpucluster/gpucluster/test/clilive"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestVerifyReadsARealAPIServer runs the command against a real kube-apiserver with the
// controllers' CRDs served (Karpenter, Kueue, the DRA driver) and kubectl reading it: a g6e-efa
// cluster with one GPU node of its planned ones, of another type, with no agent, no network-node label
// and no queue. The table names
// each finding on its node or object, -o json carries the same report, and both exit 1.
// (The cluster built to the plan, from what `pulumi up` created, is the real-engine tier's:
// enginetest.checkVerify.)
func TestVerifyReadsARealAPIServer(t *testing.T) {
	s := kubeapi.StartForTest(t)
	kubeconfig, err := s.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	spec, err := topology.LoadStack(clilive.Repo("stacks", "Pulumi.g6e-efa.yaml"), clilive.TestDay)
	if err != nil {
		t.Fatal(err)
	}
	p := spec.Pools[0]
	labels := map[string]string{topology.LabelInstanceType: "g5.48xlarge", topology.LabelZone: p.AvailabilityZones[0]}
	for k, v := range p.Labels {
		labels[k] = v
	}
	var taints []map[string]any
	for _, t := range p.Taints {
		taints = append(taints, map[string]any{"key": t.Key, "value": t.Value, "effect": t.Effect})
	}
	if err := s.CreateReadyNode(kubeapi.Node("gpu-0", labels, taints, topology.NodeAllocatable(p))); err != nil {
		t.Fatal(err)
	}

	code, table, errOut := clilive.Run(t, "verify", "--stack", "g6e-efa", "--kubeconfig", kubeconfig)
	for _, want := range []string{
		fmt.Sprintf("error node-count [gpu]: 1 node(s) carry gpucluster.io/pool=gpu; the plan has %d", p.Scaling.DesiredNodes),
		"error instance-type [gpu, node gpu-0]: node.kubernetes.io/instance-type is g5.48xlarge; the pool's nodes are " + p.Instance.Name,
		"error agent-missing [gpu, node gpu-0]: no nvidia-device-plugin pod runs on the node",
		"error agent-missing [gpu, node gpu-0]: no aws-efa-k8s-device-plugin pod runs on the node",
		"error clusterqueue-inactive [gpu, ClusterQueue gpu]: no ClusterQueue gpu in the cluster",
		"error(s), 0 warning(s): the cluster differs from the plan of stack g6e-efa",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q", want)
		}
	}
	if code != exitcode.Fail || t.Failed() {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, table, errOut)
	}

	code, out, _ := clilive.Run(t, "verify", "--stack", "g6e-efa", "--kubeconfig", kubeconfig, "-o", "json")
	if code != exitcode.Fail {
		t.Errorf("-o json exits %d", code)
	}
	var r verify.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	if len(r.Pools) != 1 || len(r.Pools[0].Nodes) != 1 || r.Pools[0].Nodes[0] != "gpu-0" || r.Errors != strings.Count(table, "\nerror ") {
		t.Errorf("-o json does not carry the table's report: %+v", r)
	}
}
