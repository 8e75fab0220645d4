package doctor

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkParseLargeLog parses the p5 log repeated 100 times (70,500 lines, 6.6 MB): the size of
// a long multi-node job's NCCL_DEBUG=INFO output.
func BenchmarkParseLargeLog(b *testing.B) {
	one, err := os.ReadFile("testdata/p5-efa.log")
	if err != nil {
		b.Fatal(err)
	}
	log := strings.Repeat(string(one), 100)
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		l, err := Parse(strings.NewReader(log))
		if err != nil {
			b.Fatal(err)
		}
		Diagnose(l, nil, nil, "")
	}
}
