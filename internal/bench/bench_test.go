package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/scanbaseline"
)

// BenchmarkParsePerf reads two launcher logs, each beside a plain scan of the same bytes (lines
// holding "busbw"): "sweeps" is 200 sweeps of the 2.19-format fixture, every line behind a
// kubectl timestamp, NCCL INFO lines between them; "job" is one job's log as NCCL_DEBUG=INFO
// writes it, the doctor's p5 log repeated 100 times (6.6 MB of INFO lines), then its table.
func BenchmarkParsePerf(b *testing.B) {
	one, err := os.ReadFile("testdata/kubectl-timestamps-nocheck.txt")
	if err != nil {
		b.Fatal(err)
	}
	info, err := os.ReadFile("../doctor/testdata/p5-efa.log")
	if err != nil {
		b.Fatal(err)
	}
	table, err := os.ReadFile("testdata/srun-p4de-2node.txt")
	if err != nil {
		b.Fatal(err)
	}
	for _, log := range []struct {
		name, text string
		tables     int
	}{
		{"sweeps", strings.Repeat(string(one)+"2026-11-20T14:05:00Z ip-10-1-0-7:41:98 [0] NCCL INFO comm 0x55d1c3a0 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0\n", 200), 200},
		{"job", strings.Repeat(string(info), 100) + string(table), 1},
	} {
		b.Run(log.name+"/bench", func(b *testing.B) {
			b.SetBytes(int64(len(log.text)))
			b.ReportAllocs()
			for b.Loop() {
				p, err := ParsePerf(strings.NewReader(log.text))
				if err != nil || len(p.Tables) != log.tables {
					b.Fatalf("%v, %d tables", err, len(p.Tables))
				}
			}
		})
		b.Run(log.name+"/plain-scan", func(b *testing.B) { scanbaseline.Run(b, log.text, "busbw") })
	}
}
