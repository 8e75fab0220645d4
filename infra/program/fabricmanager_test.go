package program

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/fabricmanager"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// TestFabricManagerTaintIsLiftedOnlyOnItsOwnNode runs the gate's own lifter shell, as the
// program renders it, with bash and curl against the real API server, holding the token the
// kubelet would mount into a gate pod on node A (bound to the pod, so it names A), under the
// service account, RBAC and admission policy the program creates: the lifter removes exactly the
// startup taint of A, and a second run (a restarted pod) finds nothing to do; on node B it is
// refused with the policy's 403 and says so, and B keeps its taint. Other patches the RBAC grant
// would allow are refused too: labels, another taint, a token bound to no pod.
func TestFabricManagerTaintIsLiftedOnlyOnItsOwnNode(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the gate's script: %v", tool, err)
		}
	}
	ev := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml") // host fabric manager: the gate
	s := apiServer(t)
	var lifter map[string]any
	for _, obj := range kubeObjects(ev) {
		switch obj["metadata"].(map[string]any)["name"] {
		case fabricmanager.GateName:
			lifter = container(t, obj, "containers", "lift-taint")
		case fabricmanager.ServiceAccount, fabricmanager.PolicyName: // the account, its role, binding and limit
			if err := s.Create(obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(obj) })
		}
	}
	if lifter == nil {
		t.Fatal("the p5-efa stack has no fabric-manager gate")
	}
	fn := shellFunction(t, lifter["command"].([]any)[2].(string), "lift_taint")

	taints := []map[string]any{
		{"key": topology.ResourceGPU, "value": "true", "effect": "NoSchedule"},
		{"key": topology.FabricManagerTaint.Key, "value": topology.FabricManagerTaint.Value, "effect": topology.FabricManagerTaint.Effect},
		{"key": "example.com/other", "value": "x", "effect": "NoSchedule"},
	}
	own, other := "fm-gate-a", "fm-gate-b"
	for _, n := range []string{own, other} {
		node := kubeapi.Node(n, nil, taints, nil)
		if err := s.Create(node); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Delete(node) })
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "fm-gate-pod", "namespace": k8sargs.Namespace},
		"spec": map[string]any{"nodeName": own, "serviceAccountName": fabricmanager.ServiceAccount,
			"containers": []any{map[string]any{"name": "lift-taint", "image": fabricmanager.LifterImage}}}}
	if err := s.Create(pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(pod) })
	token, err := s.PodServiceAccountToken(k8sargs.Namespace, fabricmanager.ServiceAccount, "fm-gate-pod")
	if err != nil {
		t.Fatal(err)
	}
	unbound, err := s.ServiceAccountToken(k8sargs.Namespace, fabricmanager.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	// patch sends a JSON patch as the lifter, dry run: admission decides, nothing changes.
	patch := func(token, node, ops string) (int, string) {
		code, body, err := s.DoAs(token, "PATCH", "/api/v1/nodes/"+node+"?dryRun=All", "application/json-patch+json", []byte(ops))
		if err != nil {
			t.Fatal(err)
		}
		return code, string(body)
	}
	removeAt := func(i int, key string) string {
		return fmt.Sprintf(`[{"op":"test","path":"/spec/taints/%d/key","value":%q},{"op":"remove","path":"/spec/taints/%d"}]`, i, key, i)
	}
	// The taint's removal and one more operation: each rule is checked on its own.
	withRemoval := func(op string) string {
		return strings.TrimSuffix(removeAt(1, topology.FabricManagerTaint.Key), "]") + "," + op + "]"
	}
	// The API server enforces a new policy once its informer has it: wait for the refusal.
	deadline := time.Now().Add(30 * time.Second)
	for code, _ := patch(token, other, removeAt(1, topology.FabricManagerTaint.Key)); code != 403; code, _ = patch(token, other, removeAt(1, topology.FabricManagerTaint.Key)) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the admission policy still does not refuse the lifter another node with 403: HTTP %d", code)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, c := range []struct{ what, token, ops, want string }{
		{"a token bound to no pod", unbound, removeAt(1, topology.FabricManagerTaint.Key), "the token names no node"},
		{"another taint", token, removeAt(2, "example.com/other"), "may only remove " + topology.FabricManagerTaint.Key},
		{"a label beside the taint", token, withRemoval(`{"op":"add","path":"/metadata/labels/example.com~1x","value":"y"}`), "may not change a node's labels"},
		{"schedulability beside the taint", token, withRemoval(`{"op":"add","path":"/spec/unschedulable","value":true}`), "schedulability"},
	} {
		if code, body := patch(c.token, own, c.ops); code != 403 || !strings.Contains(body, c.want) {
			t.Errorf("%s: HTTP %d %s, want 403 %q", c.what, code, body, c.want)
		}
	}

	ca, err := s.CertificateAuthority()
	if err != nil {
		t.Fatal(err)
	}
	sa := t.TempDir()
	os.WriteFile(filepath.Join(sa, "token"), []byte(token), 0o600)
	os.WriteFile(filepath.Join(sa, "ca.crt"), ca, 0o600)
	u, _ := url.Parse(s.URL)
	lift := func(node string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -eu\n"+fn+"lift_taint")
		cmd.Env = append(os.Environ(), "SA_DIR="+sa, "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port(),
			"NODE_NAME="+node, "TAINT_KEY="+topology.FabricManagerTaint.Key)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	keys := func(node string) []string {
		got, err := s.Get(kubeapi.Node(node, nil, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, tn := range got["spec"].(map[string]any)["taints"].([]any) {
			ks = append(ks, tn.(map[string]any)["key"].(string))
		}
		return ks
	}

	// Another node: refused, and the lifter says so instead of walking past a 403.
	if out, err := lift(other); err == nil || !strings.Contains(out, "HTTP 403") || !strings.Contains(out, "may patch only the node its pod runs on") {
		t.Errorf("lifting on another node: err %v, output %q", err, out)
	}
	if k := keys(other); !slices.Contains(k, topology.FabricManagerTaint.Key) {
		t.Errorf("another node lost its taint: %v", k)
	}
	// Its own node: the taint goes, every other stays.
	out, err := lift(own)
	if err != nil || !strings.Contains(out, "removed "+topology.FabricManagerTaint.Key) {
		t.Fatalf("lifting: %v\n%s", err, out)
	}
	if k := keys(own); slices.Contains(k, topology.FabricManagerTaint.Key) || !slices.Contains(k, topology.ResourceGPU) || !slices.Contains(k, "example.com/other") {
		t.Errorf("taints after lifting: %v", k)
	}
	// A restarted pod on the initialized node: nothing to remove, no error.
	if out, err := lift(own); err != nil || !strings.Contains(out, "has no") {
		t.Errorf("second run: %v\n%s", err, out)
	}
}

// TestFabricManagerDaemonSetWaitsForItsFabricManager runs the DaemonSet's wait, as the program
// renders it: a fabric manager that exits before serving fails the container (the kubelet
// restarts it); one that answers on its port lets the lifter go on.
func TestFabricManagerDaemonSetWaitsForItsFabricManager(t *testing.T) {
	var c map[string]any
	for _, obj := range kubeObjects(evaluate(t, "../../stacks/Pulumi.p4d-custom-ami.yaml")) {
		if obj["kind"] == "DaemonSet" && obj["metadata"].(map[string]any)["name"] == fabricmanager.Name {
			c = container(t, obj, "containers", "fabricmanager")
		}
	}
	if c == nil {
		t.Fatal("the p4d-custom-ami stack has no fabric-manager DaemonSet")
	}
	fn := shellFunction(t, c["command"].([]any)[2].(string), "wait_for_fabric_manager")
	wait := func(port, pid string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -eu\n"+fn+"wait_for_fabric_manager")
		cmd.Env = append(os.Environ(), "FM_PORT="+port, "FM_PID="+pid)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	dead := exec.Command("true")
	dead.Run()
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := strings.TrimPrefix(free.Addr().String(), "127.0.0.1:")
	free.Close()
	if out, err := wait(closedPort, strconv.Itoa(dead.Process.Pid)); err == nil || !strings.Contains(out, "exited before serving") {
		t.Errorf("a dead fabric manager: err %v, output %q", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	if out, err := wait(strings.TrimPrefix(l.Addr().String(), "127.0.0.1:"), strconv.Itoa(os.Getpid())); err != nil {
		t.Errorf("a serving fabric manager: %v\n%s", err, out)
	}
}

// TestFabricManagerGateWaitsForCUDA runs the gate's init container shell, as the program renders
// it, with the CUDA sample replaced by a stand-in that fails as the sample does on a node whose
// fabric manager is not serving (exit 1, CUDA's error 802 text) twice, then passes: the shell
// retries until the pass and ends there, so the lifter starts only after CUDA works.
func TestFabricManagerGateWaitsForCUDA(t *testing.T) {
	var c map[string]any
	for _, obj := range kubeObjects(evaluate(t, "../../stacks/Pulumi.p5-efa.yaml")) {
		if obj["metadata"].(map[string]any)["name"] == fabricmanager.GateName {
			c = container(t, obj, "initContainers", "cuda-ready")
		}
	}
	if c == nil {
		t.Fatal("the p5-efa stack's gate has no cuda-ready init container")
	}
	script := c["command"].([]any)[2].(string)
	if c["image"] != fabricmanager.CUDASampleImage || !strings.Contains(script, fabricmanager.CUDASampleBinary) {
		t.Fatalf("the gate's init container runs %v: %s", c["image"], script)
	}
	dir := t.TempDir()
	standIn := filepath.Join(dir, "vectorAdd") // a stand-in for NVIDIA's sample: no GPU here
	os.WriteFile(standIn, []byte(`#!/bin/sh
n=$(cat "$0.runs" 2>/dev/null || echo 0); echo $((n+1)) > "$0.runs"
if [ "$n" -lt 2 ]; then echo "Failed to allocate device vector A (error code system not yet initialized)!"; exit 1; fi
echo "Test PASSED"
`), 0o755)
	script = strings.ReplaceAll(strings.ReplaceAll(script, fabricmanager.CUDASampleBinary, standIn), "sleep 10", "sleep 0.1")
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	runs, _ := os.ReadFile(standIn + ".runs")
	if err != nil || strings.TrimSpace(string(runs)) != "3" || strings.Count(string(out), "CUDA is not ready") != 2 || !strings.Contains(string(out), "Test PASSED") {
		t.Errorf("the CUDA wait: err %v, %s runs, output:\n%s", err, runs, out)
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

// shellFunction is one shell function of a rendered script, "name() {" to its closing "}".
func shellFunction(t *testing.T, script, name string) string {
	t.Helper()
	start := strings.Index(script, name+"() {")
	end := strings.Index(script[max(start, 0):], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatalf("no %s function in the script:\n%s", name, script)
	}
	return script[start : start+end+3]
}

// The admission policy that confines the taint lifter reads the node from the pod's token, which
// the API server writes there from Kubernetes 1.30 (ServiceAccountTokenPodNodeInfo, on by
// default in 1.30, GA in 1.32): every version gpucluster accepts must have it, or the policy
// refuses every lift and no NVSwitch node ever takes a job.
func TestEveryAcceptedVersionPutsTheNodeInPodTokens(t *testing.T) {
	if v := topology.OldestKubernetesMinor(); v < 30 {
		t.Errorf("Kubernetes 1.%d is accepted, but its service-account tokens name no node", v)
	}
}
