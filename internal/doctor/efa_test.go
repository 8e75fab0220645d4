package doctor

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// benchFixture is one of bench's EFA fixtures: a benchmark MPIJob's launcher log with its counter
// blocks (internal/bench/testdata, whose headers name their models).
func benchFixture(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile("../bench/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

func diagnoseLines(t *testing.T, lines []string) *Report {
	t.Helper()
	l, err := Parse(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return Diagnose(l, nil, nil, "")
}

func findingCodes(r *Report) string {
	var c []string
	for _, f := range r.Findings {
		c = append(c, f.Code+":"+f.Severity)
	}
	return strings.Join(c, ",")
}

// TestDoctorReadsTheEFACounters: the doctor reads gpucluster's counter blocks in a job's log.
// Over EFA (452 GB/s, the devices' bytes in the terabytes) it finds nothing wrong and reports the
// bytes; with the devices flat (a few kB each, under efareading.FloorPerNode a node) it fails the
// job whatever NCCL printed, here "Using network Libfabric" from the EFA run; the fabric's events
// are a warning.
func TestDoctorReadsTheEFACounters(t *testing.T) {
	efa := benchFixture(t, "efa-p5-2node.txt")
	r := diagnoseLines(t, efa)
	if r.EFA == nil || len(r.EFA.Nodes) != 2 || r.EFA.TxBytes < 1e12 || strings.Contains(findingCodes(r), "efa-") || r.Outcome() != OutcomePass {
		t.Errorf("over EFA: %+v, findings %s, outcome %s", r.EFA, findingCodes(r), r.Outcome())
	}

	// Each node's 32 devices moved a few kB between the readings: NCCL's traffic went elsewhere.
	var flatCounters, libfabricNCCL []string
	for _, node := range []string{"ip-10-1-4-21.us-west-2.compute.internal", "ip-10-1-4-22.us-west-2.compute.internal"} {
		for d := range 32 {
			device := fmt.Sprintf("rdmap%ds0", 79+d)
			before := map[string]uint64{topology.EFATxBytes: 9_100_000_000_000, topology.EFARxBytes: 9_104_000_000_000}
			after := map[string]uint64{topology.EFATxBytes: before[topology.EFATxBytes] + 1500 + uint64(d)*300, topology.EFARxBytes: before[topology.EFARxBytes] + 1500}
			flatCounters = append(flatCounters, "[1,0]<stdout>:"+topology.EFACounterLine(topology.EFAPhaseBefore, node, device, before),
				"[1,0]<stdout>:"+topology.EFACounterLine(topology.EFAPhaseAfter, node, device, after))
		}
	}
	for _, line := range efa {
		if !strings.Contains(line, topology.EFACounterMarker) {
			libfabricNCCL = append(libfabricNCCL, line)
		}
	}
	r = diagnoseLines(t, append(flatCounters, libfabricNCCL...))
	if r.Network != "Libfabric" || !strings.Contains(findingCodes(r), CodeEFAUnused+":error") || r.Outcome() != OutcomeFail {
		t.Fatalf("Libfabric named, counters flat: network %s, findings %s, outcome %s", r.Network, findingCodes(r), r.Outcome())
	}
	for _, f := range r.Findings {
		if f.Code == CodeEFAUnused && (!strings.Contains(f.Evidence, "the 2 nodes' EFA devices sent") || !strings.Contains(f.Fix, topology.ResourceEFA)) {
			t.Errorf("evidence %q, fix %q", f.Evidence, f.Fix)
		}
	}

	r = diagnoseLines(t, benchFixture(t, "efa-retrans-p5.txt"))
	if !strings.Contains(findingCodes(r), CodeEFAFabricEvents+":warning") || strings.Contains(findingCodes(r), CodeEFAUnused) {
		t.Errorf("retransmit timeouts: findings %s", findingCodes(r))
	}

	// A log without blocks has no EFA reading, and one node's blocks prove nothing either way.
	if r := diagnoseLines(t, libfabricNCCL); r.EFA != nil {
		t.Errorf("no blocks, yet %+v", r.EFA)
	}
	var oneNode []string
	for _, line := range flatCounters {
		if strings.Contains(line, "node=ip-10-1-4-21.") { // the first node's readings alone
			oneNode = append(oneNode, line)
		}
	}
	if r := diagnoseLines(t, append(oneNode, libfabricNCCL...)); len(oneNode) == 0 || strings.Contains(findingCodes(r), CodeEFAUnused) {
		t.Errorf("one node's readings (%d lines): findings %s", len(oneNode), findingCodes(r))
	}
}
