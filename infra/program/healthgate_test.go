package program

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/healthgate"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/test/kubeapi"
)

// TestHealthGateActsOnlyOnItsOwnNode runs the gate container's script, as the program renders it,
// with bash and curl against the real API server, holding the token the kubelet would mount into a
// gate pod on node A (bound to the pod, so it names A), under the service account, RBAC and
// admission policy the program creates. With a failed check in the results, A keeps its health
// taint, gets the health label naming the check and a Warning event that `kubectl describe node`
// shows; once every check passes, the label goes, the taint is lifted (every other stays) and a
// Normal event says so; a restarted pod finds nothing to lift. On node B it is refused with the
// policy's 403 and says so, and B is untouched. Other writes the RBAC grants would allow are
// refused too: another label, another taint, an annotation, an owner reference, a finalizer,
// cordoning, an event about B, a token bound to no pod.
func TestHealthGateActsOnlyOnItsOwnNode(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "kubectl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the gate's script: %v", tool, err)
		}
	}
	ev := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml")
	pool := ev.spec.Pools[0]
	s := apiServer(t)
	var gate map[string]any
	for _, obj := range kubeObjects(ev) {
		switch obj["metadata"].(map[string]any)["name"] {
		case healthgate.DaemonSetName(pool.Name):
			gate = container(t, obj, "containers", "gate")
		case healthgate.ServiceAccount, healthgate.PolicyName: // the account, its roles, bindings and limit
			if err := s.Create(obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(obj) })
		}
	}
	if gate == nil {
		t.Fatalf("the p5-efa stack has no health gate on pool %s", pool.Name)
	}
	script := gate["command"].([]any)[2].(string)
	env := map[string]string{}
	for _, e := range gate["env"].([]any) {
		if v, ok := e.(map[string]any)["value"].(string); ok {
			env[e.(map[string]any)["name"].(string)] = v
		}
	}
	health := map[string]any{"key": topology.HealthTaint.Key, "value": topology.HealthTaint.Value, "effect": topology.HealthTaint.Effect}
	taints := []map[string]any{{"key": topology.ResourceGPU, "value": "true", "effect": "NoSchedule"}, health,
		{"key": "example.com/other", "value": "x", "effect": "NoSchedule"}}
	own, other := "health-gate-a", "health-gate-b"
	for _, n := range []string{own, other} {
		node := kubeapi.Node(n, map[string]string{topology.LabelPool: pool.Name}, taints, nil)
		if err := s.Create(node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(node) })
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "health-gate-pod", "namespace": k8sargs.Namespace},
		"spec": map[string]any{"nodeName": own, "serviceAccountName": healthgate.ServiceAccount,
			"containers": []any{map[string]any{"name": "gate", "image": healthgate.GateImage}}}}
	if err := s.Create(pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(pod) })
	token, err := s.PodServiceAccountToken(k8sargs.Namespace, healthgate.ServiceAccount, "health-gate-pod")
	if err != nil {
		t.Fatal(err)
	}
	unbound, err := s.ServiceAccountToken(k8sargs.Namespace, healthgate.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	// write sends a request as the gate, dry run: admission decides, nothing changes.
	write := func(token, method, path, contentType, body string) (int, string) {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		code, resp, err := s.DoAs(token, method, path+sep+"dryRun=All", contentType, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return code, string(resp)
	}
	removeAt := func(i int, key string) string {
		return fmt.Sprintf(`[{"op":"test","path":"/spec/taints/%d/key","value":%q},{"op":"remove","path":"/spec/taints/%d"}]`, i, key, i)
	}
	label := func(key, value string) string { return fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value) }
	event := func(node string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Event","metadata":{"generateName":"x-"},"involvedObject":{"kind":"Node","name":%q},"reason":"R","message":"m","type":"Normal"}`, node)
	}
	patchNode := func(token, node, ops string) (int, string) {
		return write(token, "PATCH", "/api/v1/nodes/"+node, "application/json-patch+json", ops)
	}
	// The API server enforces a new policy once its informer has it: wait for the refusal.
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := patchNode(token, other, removeAt(1, topology.HealthTaint.Key)); code != 403; code, _ = patchNode(token, other, removeAt(1, topology.HealthTaint.Key)) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the admission policy still does not refuse the gate another node with 403: HTTP %d", code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	events := "/api/v1/namespaces/" + healthgate.EventNamespace + "/events"
	for _, c := range []struct{ what, token, method, path, contentType, body, want string }{
		{"a token bound to no pod", unbound, "PATCH", "/api/v1/nodes/" + own, "application/json-patch+json", removeAt(1, topology.HealthTaint.Key), "the token names no node"},
		{"another taint", token, "PATCH", "/api/v1/nodes/" + own, "application/json-patch+json", removeAt(2, "example.com/other"), "may only remove " + topology.HealthTaint.Key},
		{"another label", token, "PATCH", "/api/v1/nodes/" + own, "application/merge-patch+json", label("example.com/x", "y"), "may change no label but " + topology.LabelHealthFailed},
		{"the pool label", token, "PATCH", "/api/v1/nodes/" + own, "application/merge-patch+json", label(topology.LabelPool, "other"), "may change no label but"},
		{"an annotation", token, "PATCH", "/api/v1/nodes/" + own, "application/merge-patch+json", `{"metadata":{"annotations":{"example.com/a":"b"}}}`, "may not change a node's annotations"},
		{"an owner reference", token, "PATCH", "/api/v1/nodes/" + own, "application/merge-patch+json",
			`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"00000000-0000-0000-0000-000000000001"}]}}`, "owner references"},
		{"a finalizer", token, "PATCH", "/api/v1/nodes/" + own, "application/merge-patch+json", `{"metadata":{"finalizers":["example.com/hold"]}}`, "finalizers"},
		{"cordoning", token, "PATCH", "/api/v1/nodes/" + own, "application/merge-patch+json", `{"spec":{"unschedulable":true}}`, "schedulability"},
		{"the health label on another node", token, "PATCH", "/api/v1/nodes/" + other, "application/merge-patch+json", label(topology.LabelHealthFailed, "gpu-count"), "only the node its pod runs on"},
		{"an event about another node", token, "POST", events, "application/json", event(other), "only report events about the node its pod runs on"},
	} {
		if code, body := write(c.token, c.method, c.path, c.contentType, c.body); code != 403 || !strings.Contains(body, c.want) {
			t.Errorf("%s: HTTP %d %s, want 403 %q", c.what, code, body, c.want)
		}
	}
	// Nor may it uncordon its node: an operator's cordon (a node drained for maintenance) stands.
	cordon := func(on bool) {
		t.Helper()
		if code, resp, err := s.DoAs(s.Token(), "PATCH", "/api/v1/nodes/"+own, "application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, on))); err != nil || code != 200 {
			t.Fatalf("the admin's cordon %v: HTTP %d %s %v", on, code, resp, err)
		}
	}
	cordon(true)
	if code, body := write(token, "PATCH", "/api/v1/nodes/"+own, "application/merge-patch+json", `{"spec":{"unschedulable":false}}`); code != 403 || !strings.Contains(body, "schedulability") {
		t.Errorf("uncordoning: HTTP %d %s, want 403 %q", code, body, "schedulability")
	}
	cordon(false)
	// What the gate may do, it may: the label alone, and an event about its node.
	if code, body := write(token, "PATCH", "/api/v1/nodes/"+own, "application/merge-patch+json", label(topology.LabelHealthFailed, "nvlink")); code != 200 {
		t.Errorf("the health label on its own node: HTTP %d %s", code, body)
	}
	if code, body := write(token, "POST", events, "application/json", event(own)); code != 201 {
		t.Errorf("an event about its own node: HTTP %d %s", code, body)
	}

	ca, err := s.CertificateAuthority()
	if err != nil {
		t.Fatal(err)
	}
	sa, results, tools := t.TempDir(), t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(sa, "token"), []byte(token), 0o600)
	os.WriteFile(filepath.Join(sa, "ca.crt"), ca, 0o600)
	// The pod idles once it has acted (exec sleep infinity); here that sleep returns at once.
	os.WriteFile(filepath.Join(tools, "sleep"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	u, _ := url.Parse(s.URL)
	checks := strings.Fields(env["CHECKS"])
	if !slices.Equal(checks, pool.HealthGate.Checks) || env["TAINT_KEY"] != topology.HealthTaint.Key || env["LABEL_KEY"] != topology.LabelHealthFailed {
		t.Fatalf("the gate's environment %v is not the pool's gate %+v", env, pool.HealthGate)
	}
	// results writes the checks' result lines as the init containers do, one failing if asked.
	results0 := func(failing string) {
		var lines []string
		for _, c := range checks {
			if c == failing {
				lines = append(lines, "fail "+c+" fi_info -p efa lists 30 EFA devices; the pool's nodes have 32")
			} else {
				lines = append(lines, "pass "+c+" fine")
			}
		}
		os.WriteFile(filepath.Join(results, "gpu"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	}
	gateOn := func(node string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"), "SA_DIR="+sa, "KUBERNETES_SERVICE_HOST="+u.Hostname(),
			"KUBERNETES_SERVICE_PORT="+u.Port(), "NODE_NAME="+node, "RESULTS="+results)
		for k, v := range env {
			if k != "RESULTS" {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	state := func(node string) (keys []string, labels map[string]string) {
		got, err := s.Get(kubeapi.Node(node, nil, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, tn := range got["spec"].(map[string]any)["taints"].([]any) {
			keys = append(keys, tn.(map[string]any)["key"].(string))
		}
		labels = map[string]string{}
		for k, v := range got["metadata"].(map[string]any)["labels"].(map[string]any) {
			labels[k] = v.(string)
		}
		return keys, labels
	}
	admin, err := s.AdminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	describe := func(node string) string {
		out, err := exec.Command("kubectl", "--kubeconfig", admin, "describe", "node", node).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl describe node %s: %v\n%s", node, err, out)
		}
		return string(out)
	}

	// A failed check: the taint stays, the label names the check, the event says what was found.
	results0(topology.HealthCheckEFA)
	out, err := gateOn(own)
	if err != nil {
		t.Fatalf("the gate on a failing node: %v\n%s", err, out)
	}
	if k, l := state(own); !slices.Contains(k, topology.HealthTaint.Key) || l[topology.LabelHealthFailed] != topology.HealthCheckEFA {
		t.Errorf("after a failed check: taints %v, label %q\n%s", k, l[topology.LabelHealthFailed], out)
	}
	if d := describe(own); !strings.Contains(d, healthgate.ReasonFailed) || !strings.Contains(d, "efa-devices: fi_info -p efa lists 30 EFA devices") {
		t.Errorf("kubectl describe node does not show the failure:\n%s", d)
	}
	// A check that wrote nothing is a failure, never a pass.
	os.WriteFile(filepath.Join(results, "gpu"), []byte("pass "+checks[0]+" fine\n"), 0o644)
	if out, err := gateOn(own); err != nil || !strings.Contains(out, checks[1]+": fail: no result") {
		t.Errorf("results missing: %v\n%s", err, out)
	}
	if _, l := state(own); l[topology.LabelHealthFailed] != checks[1] {
		t.Errorf("results missing: label %q, want %q", l[topology.LabelHealthFailed], checks[1])
	}

	// Another node: refused, and the gate says so instead of walking past a 403.
	results0("")
	if out, err := gateOn(other); err == nil || !strings.Contains(out, "HTTP 403") || !strings.Contains(out, "only the node its pod runs on") {
		t.Errorf("the gate on another node: err %v, output %q", err, out)
	}
	if k, l := state(other); !slices.Contains(k, topology.HealthTaint.Key) || l[topology.LabelHealthFailed] != "" {
		t.Errorf("another node was changed: taints %v, labels %v", k, l)
	}
	// Every check passes (the node mended, its pod deleted): the label goes, the taint is lifted.
	out, err = gateOn(own)
	if err != nil || !strings.Contains(out, "removed "+topology.HealthTaint.Key) {
		t.Fatalf("the gate on a healthy node: %v\n%s", err, out)
	}
	k, l := state(own)
	if slices.Contains(k, topology.HealthTaint.Key) || !slices.Contains(k, topology.ResourceGPU) || !slices.Contains(k, "example.com/other") {
		t.Errorf("taints after a pass: %v", k)
	}
	if _, ok := l[topology.LabelHealthFailed]; ok || l[topology.LabelPool] != pool.Name {
		t.Errorf("labels after a pass: %v", l)
	}
	if d := describe(own); !strings.Contains(d, healthgate.ReasonPassed) {
		t.Errorf("kubectl describe node does not show the pass:\n%s", d)
	}
	// A restarted pod on the checked node: nothing to lift, no error.
	if out, err := gateOn(own); err != nil || !strings.Contains(out, "has no") {
		t.Errorf("second run: %v\n%s", err, out)
	}
	var evs struct {
		Items []struct {
			Type, Reason   string
			InvolvedObject struct{ Name string } `json:"involvedObject"`
		} `json:"items"`
	}
	code, body, err := s.DoAs(s.Token(), "GET", events, "", nil)
	if err != nil || code != 200 || json.Unmarshal(body, &evs) != nil {
		t.Fatalf("listing events: %v HTTP %d", err, code)
	}
	var reasons []string
	for _, e := range evs.Items {
		if e.InvolvedObject.Name == own {
			reasons = append(reasons, e.Type+" "+e.Reason)
		}
		if e.InvolvedObject.Name == other {
			t.Errorf("an event about the other node: %+v", e)
		}
	}
	slices.Sort(reasons) // listed by name, which the API server generated
	if want := []string{"Normal " + healthgate.ReasonPassed, "Normal " + healthgate.ReasonPassed, "Warning " + healthgate.ReasonFailed, "Warning " + healthgate.ReasonFailed}; !slices.Equal(reasons, want) {
		t.Errorf("events on %s: %v, want %v", own, reasons, want)
	}
}

// container is a pod template's container (or init container) by name, nil if none.
func container(t *testing.T, obj map[string]any, key, name string) map[string]any {
	t.Helper()
	spec := obj["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	list, _ := spec[key].([]any)
	for _, c := range list {
		if c.(map[string]any)["name"] == name {
			return c.(map[string]any)
		}
	}
	t.Fatalf("%v has no %s %q", obj["metadata"].(map[string]any)["name"], key, name)
	return nil
}

// The admission policy that confines the gate reads the node from the pod's token, which the API
// server writes there from Kubernetes 1.30 (ServiceAccountTokenPodNodeInfo, on by default in
// 1.30, GA in 1.32): every version gpucluster accepts must have it, or the policy refuses every
// lift and no GPU node ever takes a job.
func TestEveryAcceptedVersionPutsTheNodeInPodTokens(t *testing.T) {
	if v := topology.OldestKubernetesMinor(); v < 30 {
		t.Errorf("Kubernetes 1.%d is accepted, but its service-account tokens name no node", v)
	}
}

// TestBottlerocketGateSeesTheGPUs: on a Bottlerocket pool, whose NVIDIA toolkit shows an
// unprivileged container no GPU, the GPU checks hold CAP_SYS_ADMIN in their bounding set (what
// the toolkit reads as privileged) and nothing more: nobody, no privilege escalation, not
// privileged, every other capability dropped, and REVIEW.md's gate line says so. The real API
// server accepts that DaemonSet. On the EKS AL2023 image the checks add no capability.
func TestBottlerocketGateSeesTheGPUs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "Pulumi.br.yaml")
	stack := "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: br, profile: p5-efa, amiFamily: bottlerocket-nvidia}\n    - {name: al, profile: p5-efa}\n"
	if err := os.WriteFile(file, []byte(stack), 0o644); err != nil {
		t.Fatal(err)
	}
	ev := evaluate(t, file)
	gates := map[string]map[string]any{}
	for _, obj := range kubeObjects(ev) {
		if obj["kind"] == "DaemonSet" && strings.HasPrefix(str(obj["metadata"].(map[string]any)["name"]), healthgate.GateName) {
			gates[str(obj["metadata"].(map[string]any)["name"])] = obj
		}
	}
	br, al := gates[healthgate.DaemonSetName("br")], gates[healthgate.DaemonSetName("al")]
	if br == nil || al == nil {
		t.Fatalf("gates %v", slices.Collect(maps.Keys(gates)))
	}
	sc := container(t, br, "initContainers", "gpu-checks")["securityContext"].(map[string]any)
	if str(sc["capabilities"]) != str(map[string]any{"drop": []any{"ALL"}, "add": []any{"SYS_ADMIN"}}) ||
		sc["runAsUser"] != 65534.0 || sc["runAsNonRoot"] != true || sc["allowPrivilegeEscalation"] != false || sc["privileged"] != nil {
		t.Errorf("Bottlerocket pool's GPU checks: security context %v, want nobody with SYS_ADMIN in the bounding set alone", sc)
	}
	if caps := container(t, al, "initContainers", "gpu-checks")["securityContext"].(map[string]any)["capabilities"]; str(caps) != str(map[string]any{"drop": []any{"ALL"}}) {
		t.Errorf("AL2023 pool's GPU checks: capabilities %v, want every one dropped", caps)
	}
	for _, p := range ev.spec.Pools {
		if got := strings.Contains(p.HealthGate.Describe(), "CAP_SYS_ADMIN in their bounding set only"); got != (p.Name == "br") {
			t.Errorf("pool %s: the gate's description %q says the bounding capability: %v", p.Name, p.HealthGate.Describe(), got)
		}
	}
	s := apiServer(t)
	br["metadata"].(map[string]any)["namespace"] = "default"
	if err := s.Create(br); err != nil {
		t.Fatalf("the API server refuses the Bottlerocket pool's gate: %v", err)
	}
	t.Cleanup(func() { s.Delete(br) })
}
