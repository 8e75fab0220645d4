package bench

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkParsePerf reads a long launcher log: 200 sweeps of the 2.19-format fixture, every
// line behind a kubectl timestamp, NCCL INFO lines between them.
func BenchmarkParsePerf(b *testing.B) {
	one, err := os.ReadFile("testdata/kubectl-timestamps-nocheck.txt")
	if err != nil {
		b.Fatal(err)
	}
	log := strings.Repeat(string(one)+"2026-11-20T14:05:00Z ip-10-1-0-7:41:98 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0\n", 200)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		p, err := ParsePerf(strings.NewReader(log))
		if err != nil || len(p.Tables) != 200 {
			b.Fatalf("%v, %d tables", err, len(p.Tables))
		}
	}
}
