package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/test/scanbaseline"
)

// BenchmarkParse reads two large logs, each beside a plain scan of the same bytes (lines holding
// " via ", what `awk '/via/'` does): "p5-job" is one job's log, the p5 fixture repeated 100
// times (70,500 lines, 6.6 MB, nine lines in ten a connection); "corpus" is every corpus fixture
// repeated 40 times (121,040 lines, 10.3 MB, mostly the announcement lines a log prints once
// per rank, with every shape of line the doctor reads).
func BenchmarkParse(b *testing.B) {
	one, err := os.ReadFile("testdata/p5-efa.log")
	if err != nil {
		b.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/corpus/*.log")
	var corpus strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		corpus.Write(data)
	}
	for _, log := range []struct{ name, text string }{
		{"p5-job", strings.Repeat(string(one), 100)},
		{"corpus", strings.Repeat(corpus.String(), 40)},
	} {
		b.Run(log.name+"/doctor", func(b *testing.B) {
			b.SetBytes(int64(len(log.text)))
			b.ReportAllocs()
			for b.Loop() {
				l, err := Parse(strings.NewReader(log.text))
				if err != nil {
					b.Fatal(err)
				}
				Diagnose(l, nil, nil, "")
			}
		})
		b.Run(log.name+"/plain-scan", func(b *testing.B) { scanbaseline.Run(b, log.text, " via ") })
	}
}
