package program

import (
	"bytes"
	"context"
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
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/kubeapi"
)

// TestFabricManagerTaintIsLiftedWhenFabricManagerServes runs the gate's own shell, as the program
// renders it, with bash and curl against the real API server and the service account and RBAC
// the program creates: nothing happens until something answers on fabric manager's command port;
// then exactly the startup taint goes, the node's other taints stay, and a second run (a
// restarted pod) finds nothing to do. A fabric manager that dies first fails the container.
func TestFabricManagerTaintIsLiftedWhenFabricManagerServes(t *testing.T) {
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed to run the gate's script: %v", tool, err)
		}
	}
	ev := evaluate(t, "../../stacks/Pulumi.p5-efa.yaml") // host fabric manager: the gate
	s := apiServer(t)
	var gate map[string]any
	for _, obj := range kubeObjects(ev) {
		md := obj["metadata"].(map[string]any)
		switch {
		case md["name"] == fabricmanager.GateName:
			gate = obj
		case md["name"] == fabricmanager.ServiceAccount: // the account, its role and binding
			if err := s.Create(obj); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Delete(obj) })
		}
	}
	if gate == nil {
		t.Fatal("the p5-efa stack has no fabric-manager gate")
	}
	c := gate["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	script := c["command"].([]any)[2].(string)
	start, end := strings.Index(script, "lift_taint() {"), strings.Index(script, "\n}\n")
	if start < 0 || end < start {
		t.Fatalf("no lift_taint function in the gate's script:\n%s", script)
	}
	fn := script[start : end+3]

	node := "fm-gate-0"
	taints := []map[string]any{
		{"key": topology.ResourceGPU, "value": "true", "effect": "NoSchedule"},
		{"key": topology.FabricManagerTaint.Key, "value": topology.FabricManagerTaint.Value, "effect": topology.FabricManagerTaint.Effect},
		{"key": "example.com/other", "value": "x", "effect": "NoSchedule"},
	}
	nodeObj := kubeapi.Node(node, nil, taints, nil)
	if err := s.Create(nodeObj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Delete(nodeObj) })

	token, err := s.ServiceAccountToken("kube-system", fabricmanager.ServiceAccount)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := s.CertificateAuthority()
	if err != nil {
		t.Fatal(err)
	}
	sa := t.TempDir()
	os.WriteFile(filepath.Join(sa, "token"), []byte(token), 0o600)
	os.WriteFile(filepath.Join(sa, "ca.crt"), ca, 0o600)
	u, _ := url.Parse(s.URL)
	run := func(port, pid string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", "-c", "set -eu\n"+fn+"lift_taint")
		cmd.Env = append(os.Environ(), "SA_DIR="+sa, "KUBERNETES_SERVICE_HOST="+u.Hostname(), "KUBERNETES_SERVICE_PORT="+u.Port(),
			"NODE_NAME="+node, "TAINT_KEY="+topology.FabricManagerTaint.Key, "FM_PORT="+port, "FM_PID="+pid)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	keys := func() []string {
		got, err := s.Get(nodeObj)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, tn := range got["spec"].(map[string]any)["taints"].([]any) {
			ks = append(ks, tn.(map[string]any)["key"].(string))
		}
		return ks
	}

	// Fabric manager died before serving: the script gives up (the kubelet restarts the pod).
	dead := exec.Command("true")
	dead.Run()
	free, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := strings.TrimPrefix(free.Addr().String(), "127.0.0.1:")
	free.Close()
	if out, err := run(closedPort, strconv.Itoa(dead.Process.Pid)); err == nil || !strings.Contains(out, "exited before serving") {
		t.Errorf("a dead fabric manager: err %v, output %q", err, out)
	}
	if k := keys(); !slices.Contains(k, topology.FabricManagerTaint.Key) {
		t.Fatalf("the taint went before fabric manager served: %v", k)
	}

	// Fabric manager serves: the taint goes, every other stays (the node controller's
	// not-ready taint among them: another agent's, added meanwhile).
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
	port := strings.TrimPrefix(l.Addr().String(), "127.0.0.1:")
	out, err := run(port, "")
	if err != nil || !strings.Contains(out, "removed "+topology.FabricManagerTaint.Key) {
		t.Fatalf("lifting: %v\n%s", err, out)
	}
	if k := keys(); slices.Contains(k, topology.FabricManagerTaint.Key) || !slices.Contains(k, topology.ResourceGPU) || !slices.Contains(k, "example.com/other") {
		t.Errorf("taints after lifting: %v", k)
	}
	// A restarted pod on the initialized node: nothing to remove, no error.
	if out, err := run(port, ""); err != nil || !strings.Contains(out, "has no") {
		t.Errorf("second run: %v\n%s", err, out)
	}
}
