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

// TestMNNVLFindingsNeedEveryCommunicatorOrDevice: multi-node NVLink and NVLS are judged by the
// job, not by one line. A split communicator inside one node reports MNNVL 0 as NCCL sets it only
// for communicators across nodes of one clique (src/init.cc), so it does not make the job's
// MNNVL "off"; a device without NVLS beside devices with it does not make NVLS unavailable; and a
// GPU outside any NVLink clique (cliqueId 0x0, as H100s print it in NVIDIA/nccl#1584) is no clique.
func TestMNNVLFindingsNeedEveryCommunicatorOrDevice(t *testing.T) {
	healthy, err := os.ReadFile("testdata/gb200-mnnvl.log")
	if err != nil {
		t.Fatal(err)
	}
	pool := profile(t, "gb200-nvl72")
	read := func(log string) *Report {
		t.Helper()
		l, err := Parse(strings.NewReader(log))
		if err != nil {
			t.Fatal(err)
		}
		return Diagnose(l, nil, pool, "profile gb200-nvl72")
	}
	const worldComm = "comm 0xaa0000 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 1\n"
	const split = "nvl-nccl-allreduce-worker-0:4100:4140 [0] NCCL INFO comm 0xbb0000 rank 0 nRanks 4 nNodes 1 localRanks 4 localRank 0 MNNVL 0\n"
	if !strings.Contains(string(healthy), worldComm) {
		t.Fatalf("the fixture has no %q", worldComm)
	}
	r := read(strings.Replace(string(healthy), worldComm, worldComm+split, 1))
	if r.MNNVL == nil || r.MNNVL.Off != 1 || strings.Contains(codes(r), "mnnvl-off") {
		t.Errorf("one single-node communicator without MNNVL beside 8 with it: MNNVL %+v, findings %s", r.MNNVL, codes(r))
	}

	const dev0 = "NVLS multicast support is available on dev 0"
	const dev0Off = "NVLS multicast support is not available on dev 0"
	r = read(strings.Replace(string(healthy), dev0, dev0Off, 1))
	if r.MNNVL == nil || r.MNNVL.NVLSUnavailable != 1 || strings.Contains(codes(r), "nvls-unavailable") {
		t.Errorf("one device without NVLS beside 7 with it: MNNVL %+v, findings %s", r.MNNVL, codes(r))
	}
	r = read(strings.ReplaceAll(string(healthy), "is available on dev", "is not available on dev"))
	if !strings.Contains(codes(r), "nvls-unavailable") {
		t.Errorf("no device with NVLS: findings %s", codes(r))
	}

	noClique := strings.NewReplacer("cliqueId 0x7ffe state", "cliqueId 0x0 state", " MNNVL 1\n", " MNNVL 0\n").Replace(string(healthy))
	r = read(noClique)
	if r.MNNVL == nil || len(r.MNNVL.Cliques) != 0 || !strings.Contains(evidence(r, "mnnvl-off"), "cliques seen: none") {
		t.Errorf("GPUs in no clique (0x0): cliques %v, mnnvl-off evidence %q", r.MNNVL, evidence(r, "mnnvl-off"))
	}

	// Every rank warns; the evidence is the first rank's line, as for every finding (parse.go).
	broken, err := os.ReadFile("testdata/gb200-no-imex-channel.log")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Index(string(broken), "available but not working") + 1
	later := string(broken[:first]) + strings.ReplaceAll(string(broken[first:]), "available but not working", "available but not supported")
	if got := evidence(read(later), "mnnvl-not-working"); !strings.Contains(got, "but not working") {
		t.Errorf("mnnvl-not-working quotes %q, want the first rank's warning", got)
	}
}

// evidence is the evidence of the report's finding with code, "" when it has none.
func evidence(r *Report, code string) string {
	for _, f := range r.Findings {
		if f.Code == code {
			return f.Evidence
		}
	}
	return ""
}

// TestGB200GDROffNamesTheDriverOption: aws-ofi-nccl's WARN that it turned GPUDirect RDMA off
// ("GDR disabled on GDR-supported instance type", src/platform-aws.cpp) on a GB200 node names the
// driver's topology check and the option that skips it; on a p5 node the general advice stands.
func TestGB200GDROffNamesTheDriverOption(t *testing.T) {
	healthy, err := os.ReadFile("testdata/gb200-mnnvl.log")
	if err != nil {
		t.Fatal(err)
	}
	line := "nvl-nccl-allreduce-worker-0:4100:4100 [0] NCCL INFO Using network Libfabric\n"
	off := strings.Replace(string(healthy), line, line+"nvl-nccl-allreduce-worker-0:4100:4100 [0] NCCL WARN NET/OFI GDR disabled on GDR-supported instance type p6e-gb200.36xlarge\n", 1)
	if off == string(healthy) {
		t.Fatal("the fixture has no line to add the WARN after")
	}
	l, err := Parse(strings.NewReader(off))
	if err != nil {
		t.Fatal(err)
	}
	for profileName, want := range map[string]string{"gb200-nvl72": topology.GrdmaTopologyOverride, "p5-efa": "the NVIDIA peer-memory module or dma-buf"} {
		r := Diagnose(l, nil, profile(t, profileName), "profile "+profileName)
		found := false
		for _, f := range r.Findings {
			if f.Code == "gdr-disabled" {
				found = true
				if !strings.Contains(f.Cause+" "+f.Fix, want) {
					t.Errorf("%s: gdr-disabled says %q / %q, want %q", profileName, f.Cause, f.Fix, want)
				}
			}
		}
		if !found {
			t.Errorf("%s: no gdr-disabled finding in %s", profileName, codes(r))
		}
	}
}
