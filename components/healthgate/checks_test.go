package healthgate

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// The checks' scripts run here as the pods run them (sh, awk), with stand-ins for the tools a GPU
// node has and this machine does not (no GPU, no EFA): nvidia-smi, NVIDIA's CUDA sample and
// fi_info print recorded outputs from testdata/ (testdata/README.md names what each is modelled
// on) and exit as the real ones do. The expectations come from the topology core's spec of each
// pool, as the DaemonSet's environment does.

// poolGate is the health gate the topology core derives for an instance type.
func poolGate(t *testing.T, instance string, fabric topology.Fabric) topology.HealthGateSpec {
	t.Helper()
	p, ok := topology.BuiltinProfile("p5-efa")
	if !ok {
		t.Fatal("no p5-efa profile")
	}
	p.InstanceType, p.Fabric, p.EFAInterfaces = instance, fabric, 0
	spec, err := topology.Derive("gpu", p)
	if err != nil {
		t.Fatal(err)
	}
	return spec.HealthGate
}

// standIns writes the stand-in tools into a directory for PATH. nvidia-smi prints the files of
// SMI_Q in turn on each -q (the last again once they run out), TOPO on topo -m, and with
// SMI_FAIL fails as it does without a driver; the CUDA sample fails CUDA_FAILS times with CUDA's
// error 802, then passes; fi_info prints FI_OUT, or FI_ERR on stderr and exits FI_EXIT.
func standIns(t *testing.T) string {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("nvidia-smi", `if [ -n "${SMI_FAIL:-}" ]; then
  echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."; exit 9
fi
case "$1" in
-q) n=$(cat "$0.calls" 2>/dev/null || echo 0); echo $((n+1)) > "$0.calls"
    set -- $SMI_Q; shift $(( n < $# ? n : $# - 1 )); cat "$1" ;;
topo) cat "$TOPO" ;;
esac
`)
	write("vectorAdd", `n=$(cat "$0.runs" 2>/dev/null || echo 0); echo $((n+1)) > "$0.runs"
if [ "$n" -lt "${CUDA_FAILS:-0}" ]; then echo "[Vector addition of 50000 elements]"; echo "Failed to allocate device vector A (error code system not yet initialized)!"; exit 1; fi
echo "[Vector addition of 50000 elements]"; echo "Test PASSED"; echo "Done"
`)
	write("fi_info", `if [ -n "${FI_ERR:-}" ]; then cat "$FI_ERR" >&2; exit "$FI_EXIT"; fi
cat "$FI_OUT"
`)
	return dir
}

// run runs a check's script with the gate's environment, the stand-ins and extra variables, and
// returns its results file's lines and its output.
func run(t *testing.T, script string, vars []EnvVar, result string, extra ...string) ([]string, string) {
	t.Helper()
	tools, results := standIns(t), t.TempDir()
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "PATH="+tools+":"+os.Getenv("PATH"))
	for _, v := range vars {
		switch v.Name {
		case "RESULTS":
			v.Value = results
		case "CUDA_SAMPLE":
			v.Value = filepath.Join(tools, "vectorAdd")
		case "FI_INFO":
			v.Value = filepath.Join(tools, "fi_info")
		case "RETRY_SECONDS":
			v.Value = "0.1"
		}
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	for _, e := range extra {
		k, v, _ := strings.Cut(e, "=")
		if k == "SMI_Q" || k == "TOPO" || k == "FI_OUT" || k == "FI_ERR" {
			var files []string
			for _, f := range strings.Fields(v) {
				files = append(files, filepath.Join("testdata", f))
			}
			v = strings.Join(files, " ")
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the check failed itself (it must report, not fail): %v\n%s", err, out)
	}
	lines, err := os.ReadFile(filepath.Join(results, result))
	if err != nil {
		t.Fatalf("no results: %v\n%s", err, out)
	}
	return strings.Split(strings.TrimSpace(string(lines)), "\n"), string(out)
}

func TestGPUChecksOnRecordedOutputs(t *testing.T) {
	p5, p4d := poolGate(t, "p5.48xlarge", topology.FabricEFA), poolGate(t, "p4d.24xlarge", topology.FabricEFA)
	g6e, g6 := poolGate(t, "g6e.48xlarge", topology.FabricEFA), poolGate(t, "g6.48xlarge", topology.FabricENAOnly)
	short := func(h topology.HealthGateSpec) topology.HealthGateSpec { h.WaitSeconds = 1; return h }
	cases := []struct {
		name string
		gate topology.HealthGateSpec
		env  []string
		want []string
		says string // in the output, besides the results
	}{
		{"p5, fabric up", p5, []string{"SMI_Q=nvidia-smi-q/p5-fabric-completed.txt", "TOPO=topo/p5-nv18.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "pass gpu-model NVIDIA H100 80GB HBM3",
			"pass fabric-state Completed, Success on every GPU", "pass nvlink every GPU pair over NVLink"}, ""},
		{"p5, fabric manager starting (CUDA 802 twice, the fabric In Progress twice)", p5, []string{"CUDA_FAILS=2",
			"SMI_Q=nvidia-smi-q/p5-fabric-in-progress.txt nvidia-smi-q/p5-fabric-in-progress.txt nvidia-smi-q/p5-fabric-completed-580.txt", "TOPO=topo/p5-nv18.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "pass gpu-model NVIDIA H100 80GB HBM3",
			"pass fabric-state Completed, Success on every GPU", "pass nvlink every GPU pair over NVLink"}, "wait fabric-state GPU 00000000:53:00.0 fabric state In Progress, status N/A"},
		{"p5, the fabric never comes up", short(p5), []string{"SMI_Q=nvidia-smi-q/p5-fabric-in-progress.txt", "TOPO=topo/p5-nv18.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "pass gpu-model NVIDIA H100 80GB HBM3",
			"fail fabric-state after 1 s, GPU 00000000:53:00.0 fabric state In Progress, status N/A", "pass nvlink every GPU pair over NVLink"}, ""},
		{"p5, fabric manager never serves", short(p5), []string{"CUDA_FAILS=1000"}, []string{
			"fail cuda CUDA still fails after 1 s: Failed to allocate device vector A (error code system not yet initialized)!"}, "CUDA is not ready"},
		{"p5, a GPU fallen off the bus", p5, []string{"SMI_Q=nvidia-smi-q/p5-seven-gpus.txt", "TOPO=topo/p5-seven-gpus.txt"}, []string{
			"pass cuda CUDA runs", "fail gpu-count nvidia-smi lists 7 GPUs; the pool has 8 per node", "pass gpu-model NVIDIA H100 80GB HBM3",
			"pass fabric-state Completed, Success on every GPU", "fail nvlink nvidia-smi topo -m shows 7 GPUs; the pool has 8 per node"}, ""},
		{"p5, a GPU short of fabric resources", p5, []string{"SMI_Q=nvidia-smi-q/p5-fabric-insufficient.txt", "TOPO=topo/p5-nv18.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "pass gpu-model NVIDIA H100 80GB HBM3",
			"fail fabric-state GPU 00000000:B9:00.0 fabric state Completed, status Insufficient Resources", "pass nvlink every GPU pair over NVLink"}, ""},
		{"p5, an NVLink down", p5, []string{"SMI_Q=nvidia-smi-q/p5-fabric-completed.txt", "TOPO=topo/p5-nvlink-down.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "pass gpu-model NVIDIA H100 80GB HBM3",
			"pass fabric-state Completed, Success on every GPU", "fail nvlink GPU3 and GPU5 are joined by SYS, not NVLink"}, ""},
		{"p5, no driver", p5, []string{"SMI_FAIL=1"}, []string{"pass cuda CUDA runs",
			"fail gpu-count nvidia-smi -q failed: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."}, ""},
		{"p4d: A100 reports no fabric state, NV12 in a tab-separated matrix", p4d, []string{"SMI_Q=nvidia-smi-q/p4d-fabric-na.txt", "TOPO=topo/p4d-nv12-tabs.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "pass gpu-model NVIDIA A100-SXM4-40GB", "pass nvlink every GPU pair over NVLink"}, ""},
		{"g6e: eight L40S", g6e, []string{"SMI_Q=nvidia-smi-q/g6e-l40s.txt"}, []string{"pass gpu-count 8 GPUs", "pass gpu-model NVIDIA L40S"}, ""},
		{"g6e given L4s", g6e, []string{"SMI_Q=nvidia-smi-q/g6-l4.txt"}, []string{
			"pass gpu-count 8 GPUs", "fail gpu-model GPU 00000000:9E:00.0 is NVIDIA L4; the pool has NVIDIA L40S GPUs"}, ""},
		{"g6: eight L4", g6, []string{"SMI_Q=nvidia-smi-q/g6-l4.txt"}, []string{"pass gpu-count 8 GPUs", "pass gpu-model NVIDIA L4"}, ""},
		{"g6 given L40S: the model's name is a prefix of another's", g6, []string{"SMI_Q=nvidia-smi-q/g6e-l40s.txt"}, []string{
			"pass gpu-count 8 GPUs", "fail gpu-model GPU 00000000:9E:00.0 is NVIDIA L40S; the pool has NVIDIA L4 GPUs"}, ""},
		{"p5 given A100s", p5, []string{"SMI_Q=nvidia-smi-q/p4d-fabric-na.txt", "TOPO=topo/p4d-nv12-tabs.txt"}, []string{
			"pass cuda CUDA runs", "pass gpu-count 8 GPUs", "fail gpu-model GPU 00000000:10:1C.0 is NVIDIA A100-SXM4-40GB; the pool has NVIDIA H100 GPUs",
			"fail fabric-state GPU 00000000:10:1C.0 fabric state N/A, status N/A", "pass nvlink every GPU pair over NVLink"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, out := run(t, gpuChecks(), gpuEnv(c.gate), "gpu", c.env...)
			if !slices.Equal(got, c.want) {
				t.Errorf("results:\n%s\nwant:\n%s\noutput:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"), out)
			}
			if c.says != "" && !strings.Contains(out, c.says) {
				t.Errorf("the output does not say %q:\n%s", c.says, out)
			}
		})
	}
}

func TestEFACheckOnRecordedOutputs(t *testing.T) {
	p5, p4d := poolGate(t, "p5.48xlarge", topology.FabricEFA), poolGate(t, "p4d.24xlarge", topology.FabricEFA)
	cases := []struct {
		name string
		gate topology.HealthGateSpec
		env  []string
		want string
	}{
		{"p5, libfabric 2: each device under efa and efa-direct", p5, []string{"FI_OUT=fi_info/p5-libfabric2.txt"}, "pass efa-devices libfabric lists 32 EFA devices"},
		{"p5, two devices missing", p5, []string{"FI_OUT=fi_info/p5-thirty-devices.txt"}, "fail efa-devices fi_info -p efa lists 30 EFA devices; the pool's nodes have 32"},
		{"p4d, libfabric 1", p4d, []string{"FI_OUT=fi_info/p4d-libfabric1.txt"}, "pass efa-devices libfabric lists 4 EFA devices"},
		{"p5 with p4d's devices", p5, []string{"FI_OUT=fi_info/p4d-libfabric1.txt"}, "fail efa-devices fi_info -p efa lists 4 EFA devices; the pool's nodes have 32"},
		// More than planned is as wrong as fewer: the node is not the one the pool's launch
		// template made (another type, or interfaces the plan does not count).
		{"p4d with p5's devices", p4d, []string{"FI_OUT=fi_info/p5-libfabric2.txt"}, "fail efa-devices fi_info -p efa lists 32 EFA devices; the pool's nodes have 4"},
		{"no EFA device visible", p5, []string{"FI_ERR=fi_info/none.stderr", "FI_EXIT=61"},
			"fail efa-devices fi_info -p efa lists 0 EFA devices (fi_getinfo: -61 (No data available)); the pool's nodes have 32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, out := run(t, efaCheck(), efaEnv(c.gate), "efa", c.env...)
			if !slices.Equal(got, []string{c.want}) {
				t.Errorf("results %q, want %q\noutput:\n%s", got, c.want, out)
			}
		})
	}
}

// The awk programs are inside single quotes in the scripts: one quote in them would end the
// program early.
func TestAwkProgramsHaveNoSingleQuote(t *testing.T) {
	for name, prog := range map[string]string{"smiJudge": smiJudge, "topoJudge": topoJudge, "efaJudge": efaJudge} {
		if strings.Contains(prog, "'") {
			t.Errorf("%s has a single quote", name)
		}
	}
}
