package health

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/verify"
)

// cluster is the cluster as kubectl reaches it.
type cluster struct {
	k   verify.Kubectl
	now func() time.Time
}

// kubectl runs kubectl and returns its standard output; its error carries kubectl's message.
func (c cluster) kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	return c.k.Run(ctx, stdin, args...)
}

func (c cluster) list(ctx context.Context, into any, args ...string) error {
	raw, err := c.kubectl(ctx, nil, append([]string{"get"}, append(args, "-o", "json")...)...)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, into)
}

// read is the stack's GPU nodes and every pod that has not ended.
func (c cluster) read(ctx context.Context) ([]Node, []Pod, error) {
	var nodes struct{ Items []Node }
	if err := c.list(ctx, &nodes, "nodes", "-l", topology.LabelPool); err != nil {
		return nil, nil, err
	}
	pods, err := c.pods(ctx)
	return nodes.Items, pods, err
}

func (c cluster) pods(ctx context.Context) ([]Pod, error) {
	var pods struct{ Items []Pod }
	err := c.list(ctx, &pods, "pods", "--all-namespaces", "--field-selector", "status.phase!=Succeeded,status.phase!=Failed")
	return pods.Items, err
}

func (c cluster) node(ctx context.Context, name string) (Node, error) {
	var n Node
	err := c.list(ctx, &n, "node", name)
	return n, err
}

// patch applies a JSON patch to a node.
func (c cluster) patch(ctx context.Context, node string, ops []map[string]any) error {
	body, _ := json.Marshal(ops)
	_, err := c.kubectl(ctx, nil, "patch", "node", node, "--type=json", "-p", string(body))
	return err
}

// addKey is the JSON patch operation that sets key in the map at path: the map itself when the
// object has none yet (a patch cannot add a key under a path that does not exist).
func addKey(path string, m map[string]string, key, value string) map[string]any {
	if m == nil {
		return map[string]any{"op": "add", "path": path, "value": map[string]string{key: value}}
	}
	return map[string]any{"op": "add", "path": path + "/" + jsonPointer(key), "value": value}
}

// jsonPointer escapes a map key for a JSON patch path (RFC 6901).
func jsonPointer(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// hold puts the health taint and the run's annotation on a node, unless the node changed since
// it was read (a JSON patch that tests the resource version): no taint someone else added
// meanwhile is lost, since node taints are one atomic list.
func (c cluster) hold(ctx context.Context, node, run string) error {
	for try := 0; ; try++ {
		n, err := c.node(ctx, node)
		if err != nil {
			return err
		}
		ops := []map[string]any{{"op": "test", "path": "/metadata/resourceVersion", "value": n.Metadata.ResourceVersion}}
		ops = append(ops, addKey("/metadata/annotations", n.Metadata.Annotations, topology.LabelHealthRun, run))
		t := topology.HealthTaint
		if !n.hasTaint(t) {
			taint := map[string]string{"key": t.Key, "value": t.Value, "effect": t.Effect}
			if len(n.Spec.Taints) == 0 {
				ops = append(ops, map[string]any{"op": "add", "path": "/spec/taints", "value": []any{taint}})
			} else {
				ops = append(ops, map[string]any{"op": "add", "path": "/spec/taints/-", "value": taint})
			}
		}
		err = c.patch(ctx, node, ops)
		if err == nil || try == 2 || !strings.Contains(err.Error(), "test") {
			return err
		}
	}
}

// release takes the health taint and the run's annotation off a node, and with pass also the
// failure label an earlier run's check left: the node goes back to service. Each is removed by
// index after a test of that index, so nothing else on the node is touched.
func (c cluster) release(ctx context.Context, node string, clearLabel bool) error {
	n, err := c.node(ctx, node)
	if err != nil {
		return err
	}
	var ops []map[string]any
	if i := n.taintIndex(topology.HealthTaint); i >= 0 {
		path := fmt.Sprintf("/spec/taints/%d", i)
		ops = append(ops, map[string]any{"op": "test", "path": path + "/key", "value": topology.HealthTaint.Key}, map[string]any{"op": "remove", "path": path})
	}
	if _, ok := n.Metadata.Annotations[topology.LabelHealthRun]; ok {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + jsonPointer(topology.LabelHealthRun)})
	}
	if v, ok := n.Metadata.Labels[topology.LabelHealthFailed]; ok && clearLabel && topology.IsDeepHealthCheck(v) {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/labels/" + jsonPointer(topology.LabelHealthFailed)})
	}
	if len(ops) == 0 {
		return nil
	}
	return c.patch(ctx, node, ops)
}

// fail marks a node failed as the health gate does: the failure label names the check, the
// taint stays; the run's annotation goes (the taint is now the failure's).
func (c cluster) fail(ctx context.Context, node, check string) error {
	n, err := c.node(ctx, node)
	if err != nil {
		return err
	}
	ops := []map[string]any{addKey("/metadata/labels", n.Metadata.Labels, topology.LabelHealthFailed, check)}
	if _, ok := n.Metadata.Annotations[topology.LabelHealthRun]; ok {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + jsonPointer(topology.LabelHealthRun)})
	}
	return c.patch(ctx, node, ops)
}

// event records an event on the node in the shape the health gate's has (the kubelet's for
// node events: in the default namespace, the node's name as its uid), which `kubectl describe
// node` shows.
func (c cluster) event(ctx context.Context, node, typ, reason, message string) error {
	now := c.now().UTC().Format(time.RFC3339)
	ev := map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       map[string]any{"generateName": node + ".health-", "namespace": healthgate.EventNamespace},
		"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
		"type":           typ, "reason": reason, "message": message,
		"source":             map[string]any{"component": topology.HealthComponent},
		"reportingComponent": topology.HealthComponent, "reportingInstance": topology.HealthComponent,
		"firstTimestamp": now, "lastTimestamp": now, "count": 1}
	body, _ := json.Marshal(ev)
	_, err := c.kubectl(ctx, body, "create", "-f", "-")
	return err
}

// forget takes only the run's annotation off a node: what else it carries stays.
func (c cluster) forget(ctx context.Context, node string) error {
	n, err := c.node(ctx, node)
	if err != nil || n.Metadata.Annotations[topology.LabelHealthRun] == "" {
		return err
	}
	return c.patch(ctx, node, []map[string]any{{"op": "remove", "path": "/metadata/annotations/" + jsonPointer(topology.LabelHealthRun)}})
}
