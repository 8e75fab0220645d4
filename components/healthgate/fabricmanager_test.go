package healthgate

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// customP4dGate is the gate of a p4d pool on a custom image, whose fabric manager is gpucluster's
// DaemonSet, with its waits cut to waitSeconds.
func customP4dGate(t *testing.T, waitSeconds int) topology.HealthGateSpec {
	t.Helper()
	p, _ := topology.BuiltinProfile("p4d-efa")
	p.AMIFamily, p.AMIID = topology.AMICustom, "ami-0123456789abcdef0"
	spec, err := topology.Derive("gpu", p)
	if err != nil {
		t.Fatal(err)
	}
	if spec.HealthGate.FabricManagerStatus == "" {
		t.Fatal("a custom p4d pool's gate reads no fabric-manager status")
	}
	spec.HealthGate.WaitSeconds = waitSeconds
	return spec.HealthGate
}

// TestTheGateFailsANodeWhoseFabricManagerCannotStart: what the fabric-manager DaemonSet wrote
// (components/fabricmanager's start script) decides how the CUDA wait ends.
func TestTheGateFailsANodeWhoseFabricManagerCannotStart(t *testing.T) {
	const refused = "the node's NVIDIA driver is 580.126.09, and the stack's nvidiaDriverVersion is 580.159.03: set it to the node image's driver and rebuild the fabric-manager image at it"
	const stillFails = "fail cuda CUDA still fails after 1 s: Failed to allocate device vector A (error code system not yet initialized)!"
	for _, c := range []struct {
		name, status string // "" for no status file
		wait         int
		env          []string
		want         string
	}{
		// At once, with fabric manager's own reason: the wait of 30 s would otherwise run out first.
		{"fabric manager refused to start", "fail " + refused, 30, []string{"CUDA_FAILS=1000"}, "fail cuda fabric manager cannot start: " + refused},
		{"fabric manager never started", "", 1, []string{"CUDA_FAILS=1000"},
			stillFails + " (fabric manager never started on this node: its DaemonSet's pod wrote no STATUS; is its image pullable?)"},
		{"fabric manager started, the fabric never came up", "started nv-fabricmanager 580.159.03", 1, []string{"CUDA_FAILS=1000"}, stillFails},
		{"fabric manager started and serves", "started nv-fabricmanager 580.159.03", 30, []string{"CUDA_FAILS=2",
			"SMI_Q=nvidia-smi-q/p4d-fabric-na.txt", "TOPO=topo/p4d-nv12-tabs.txt"}, "pass cuda CUDA runs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status := filepath.Join(t.TempDir(), "status")
			if c.status != "" {
				if err := os.WriteFile(status, []byte(c.status+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, out := run(t, gpuChecks(), gpuEnv(customP4dGate(t, c.wait)), "gpu", append(c.env, "FM_STATUS="+status)...)
			want := strings.ReplaceAll(c.want, "STATUS", status)
			if !slices.Contains(got, want) || (strings.HasPrefix(want, "fail") && len(got) != 1) {
				t.Errorf("results:\n%s\nwant %q\noutput:\n%s", strings.Join(got, "\n"), want, out)
			}
		})
	}
}
