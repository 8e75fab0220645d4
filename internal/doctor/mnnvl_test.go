package doctor

import (
	"os"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// TestMultiNodeNVLink reads our GB200 fixtures (the shapes of NCCL 2.30 on P6e-GB200, mnnvl.go
// names the issues they were studied in) against the gb200-nvl72 profile: a healthy run meets
// across nodes over P2P/MNNVL and matches; a pod without its ComputeDomain channel is named as such.
func TestMultiNodeNVLink(t *testing.T) {
	pool := profile(t, "gb200-nvl72")
	r := Diagnose(parseFile(t, "gb200-mnnvl.log"), nil, pool, "profile gb200-nvl72")
	if r.Verdict == nil || r.Verdict.Status != VerdictMatch {
		t.Fatalf("healthy GB200 run: verdict %+v, findings %s", r.Verdict, codes(r))
	}
	cm := r.Communicators[0]
	if cm.InterNode != topology.TransportP2P || cm.IntraNode != topology.TransportP2P || cm.Nodes != 2 {
		t.Errorf("communicator %+v", cm)
	}
	if m := r.MNNVL; m == nil || m.On != 8 || m.Off != 0 || m.CliqueSize != 72 || m.NVLSAvailable != 8 ||
		m.FabricStates[nvmlFabricCompleted] != 8 || strings.Join(m.Cliques, ",") != "0x7ffe" {
		t.Errorf("MNNVL %+v", r.MNNVL)
	}
	if c := codes(r); c != "" {
		t.Errorf("healthy run has findings %s", c)
	}

	r = Diagnose(parseFile(t, "gb200-no-imex-channel.log"), nil, pool, "profile gb200-nvl72")
	if !strings.Contains(codes(r), "mnnvl-not-working") {
		t.Errorf("no IMEX channel: findings %s", codes(r))
	}

	// The same healthy log with multi-node NVLink off: the ranks met over EFA instead. On the
	// UltraServer that is a mismatch and a warning; on a p5 profile nothing is said of MNNVL.
	healthy, err := os.ReadFile("testdata/gb200-mnnvl.log")
	if err != nil {
		t.Fatal(err)
	}
	off := strings.NewReplacer(" MNNVL 1\n", " MNNVL 0\n", "via P2P/MNNVL/read", "via NET/Libfabric/0/GDRDMA", "MNNVL 1 cliqueId", "MNNVL 0 cliqueId").Replace(string(healthy))
	l, err := Parse(strings.NewReader(off))
	if err != nil {
		t.Fatal(err)
	}
	r = Diagnose(l, nil, pool, "profile gb200-nvl72")
	if !strings.Contains(codes(r), "mnnvl-off") || r.Verdict == nil || r.Verdict.Status != VerdictMismatch {
		t.Errorf("MNNVL off on an UltraServer: findings %s, verdict %+v", codes(r), r.Verdict)
	}
	r = Diagnose(l, nil, profile(t, "p5-efa"), "profile p5-efa")
	if strings.Contains(codes(r), "mnnvl") {
		t.Errorf("a p5 run is judged for MNNVL: %s", codes(r))
	}
}

// TestFabricStateZeroIsNotAFault: NVML's fabric state 0 is NVML_GPU_FABRIC_STATE_NOT_SUPPORTED (a
// GPU outside an NVLink fabric reports it, and NCCL prints it all the same), which says nothing
// of a fabric coming up; states 1 (not started) and 2 (in progress) are the ones that mean NCCL
// started too early (nvml.h, nvmlGpuFabricState_t).
func TestFabricStateZeroIsNotAFault(t *testing.T) {
	healthy, err := os.ReadFile("testdata/gb200-mnnvl.log")
	if err != nil {
		t.Fatal(err)
	}
	for state, want := range map[string]bool{"0": false, "1": true, "2": true, "3": false} {
		l, err := Parse(strings.NewReader(strings.ReplaceAll(string(healthy), " state 3 healthMask", " state "+state+" healthMask")))
		if err != nil {
			t.Fatal(err)
		}
		r := Diagnose(l, nil, profile(t, "gb200-nvl72"), "profile gb200-nvl72")
		if got := strings.Contains(codes(r), "nvlink-fabric-not-ready"); got != want {
			t.Errorf("every GPU in NVML fabric state %s: nvlink-fabric-not-ready %v, want %v (findings %s)", state, got, want, codes(r))
		}
	}
}
