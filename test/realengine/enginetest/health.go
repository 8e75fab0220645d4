package enginetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// healthFaultLog is the diagnostics' log of a node whose GPU memory test fails (a fixture of
// our own, DCGM 4.6's JSON shape).
const healthFaultLog = "internal/health/testdata/dcgm-memory-p5.log"

// checkHealthFault runs `gpucluster health` once more on the cluster `pulumi up` built, after
// its walkthrough: every GPU node but the second runs a training pod that holds its GPUs, and
// the second's diagnostics find a memory error. The run must leave the busy nodes alone, fail
// the second (the health gate's label and taint, a Warning event with the evidence), exit 1, and
// leave none of its jobs behind. Only the failing node is checked: the walkthrough's own run
// gave nodes back, and every check here would add a kwok job's run to the stack's 8 minutes.
func (d *Deployment) checkHealthFault(ctx context.Context, where string) {
	where += ", health with a failing node"
	nodes := d.gpuNodeNames()
	if len(nodes) < 2 {
		d.t.Errorf("%s: %d GPU nodes; the check needs a busy one and a failing one", where, len(nodes))
		return
	}
	busy, failing := nodes[0], nodes[1]
	var pods []map[string]any
	for i, n := range nodes {
		if n == failing {
			continue
		}
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": fmt.Sprintf("tier-busy-train-%d", i), "namespace": benchjobs.Namespace},
			"spec": map[string]any{"nodeName": n, "tolerations": []any{map[string]any{"operator": "Exists"}},
				"containers": []any{map[string]any{"name": "train", "image": "train", "resources": map[string]any{"limits": map[string]any{topology.ResourceGPU: "1"}}}}}}
		d.must(d.server.Create(pod))
		pods = append(pods, pod)
	}
	stop, err := d.server.ServeLogOnNode(benchjobs.Namespace, topology.LabelHealthCheck, topology.HealthCheckDiag, failing, benchjobs.DiagContainer,
		kubeapi.CRILogLines(d.fixture(healthFaultLog), time.Now()))
	d.must(err)
	out, err := d.Env.Run(ctx, nil, "gpucluster", "health", "--stack", d.name, "--kubeconfig", "kubeconfig.json")
	stop()
	if code := exitCode(err); code != 1 || !strings.Contains(out, failing+": dcgm-diag fail: level 2: memory GPU3") ||
		!strings.Contains(out, "busy: pod "+benchjobs.Namespace+"/tier-busy-train-0 holds its GPUs") {
		d.t.Errorf("%s: exit %d (%v), want 1 with %s failed and %s left alone:\n%s", where, code, err, failing, busy, out)
	} else {
		d.t.Logf("%s: exit 1, %s failed, %s left alone:\n%s", where, failing, busy, out)
	}
	for _, n := range nodes {
		labels, annotations, taints := d.nodeMarks(n)
		failed := labels[topology.LabelHealthFailed] == topology.HealthCheckDiag && slices.Contains(taints, topology.HealthTaint.Key) // kept, with its label
		clean := labels[topology.LabelHealthFailed] == nil && !slices.Contains(taints, topology.HealthTaint.Key)
		if annotations[topology.LabelHealthRun] != nil || (n == failing && !failed) || (n != failing && !clean) {
			d.t.Errorf("%s: node %s after the run: labels %v, taints %v, annotations %v", where, n, labels, taints, annotations)
		}
	}
	events, err := d.server.List(map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"namespace": healthgate.EventNamespace}})
	d.must(err)
	found := 0
	for _, e := range events {
		if obj := asMap(e["involvedObject"]); obj["name"] == failing && e["reason"] == healthgate.ReasonFailed && strings.Contains(fmt.Sprint(e["message"]), "A memory mismatch was detected on GPU 3") {
			found++
		}
	}
	if found != 1 {
		d.t.Errorf("%s: %d Warning events on %s with the diagnostics' evidence, want 1", where, found, failing)
	}
	for _, pod := range pods {
		d.must(d.server.Delete(pod))
	}
	if left := d.jobObjectsLeft(); left != "" {
		d.t.Errorf("%s: after the run, still in the cluster: %s", where, left)
	}
}

// gpuNodeNames are the stack's GPU nodes, by name.
func (d *Deployment) gpuNodeNames() []string {
	nodes, err := d.server.List(map[string]any{"apiVersion": "v1", "kind": "Node"})
	d.must(err)
	var out []string
	for _, n := range nodes {
		md := asMap(n["metadata"])
		if pool := asMap(md["labels"])[topology.LabelPool]; pool != nil && pool != topology.SystemPool {
			out = append(out, fmt.Sprint(md["name"]))
		}
	}
	slices.Sort(out)
	return out
}

// nodeMarks are a node's labels, annotations and taint keys.
func (d *Deployment) nodeMarks(name string) (labels, annotations map[string]any, taints []string) {
	n, err := d.server.Get(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name}})
	d.must(err)
	md := asMap(n["metadata"])
	for _, t := range asList(asMap(n["spec"])["taints"]) {
		taints = append(taints, fmt.Sprint(asMap(t)["key"]))
	}
	return asMap(md["labels"]), asMap(md["annotations"]), taints
}
