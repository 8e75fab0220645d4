package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parseFile(t *testing.T, name string) *Perf {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var p *Perf
	if strings.HasSuffix(name, ".json") {
		p, err = ParsePerfJSON(f)
	} else {
		p, err = ParsePerf(f)
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// Each fixture's facts, read by eye from the file: the parser must find exactly these.
func TestParseFixtures(t *testing.T) {
	for _, tc := range []struct {
		file                string
		rows                int
		first, last         int64
		lastBusBW           float64 // out-of-place busbw of the last row
		collective, version string
		ranks, hosts        int
		elided, checked     bool
		avg                 float64
		typ, op             string
	}{
		{"srun-p4de-2node.txt", 29, 8, 2 << 30, 78.82, "", "", 0, 0, false, true, 23.7728, "float", "sum"},
		{"mpijob-p5-eks-excerpt.txt", 7, 0, 2 << 30, 448.22, "", "", 0, 0, true, true, 51.2208, "float", "sum"},
		{"kubectl-timestamps-nocheck.txt", 32, 8, 16 << 30, 487.65, "all_reduce_perf", "2.19.6", 16, 2, false, false, 159.81, "float", "sum"},
		{"g6e-ena-exponent.txt", 32, 8, 16 << 30, 1.94, "all_reduce_perf", "2.19.6", 8, 2, false, true, 1.09072, "float", "sum"},
		{"per-iteration-g6e.txt", 19, 1 << 10, 1 << 28, 0, "all_reduce_perf", "", 0, 0, false, true, 7.3407, "bfloat16", "max"},
		{"wrong-results.txt", 11, 1 << 20, 1 << 30, 426.20, "", "", 0, 0, false, true, 284.519, "float", "sum"},
		{"legacy-res-column.txt", 3, 1 << 20, 1 << 24, 14.0, "", "", 1, 1, false, false, 14.1, "float", "sum"}, // a 2017 rank line, without Pid
		{"all_reduce-p5.json", 12, 1 << 20, 2 << 30, 435.5305, "all_reduce_perf", "", 16, 2, false, true, 313.865, "float", "sum"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := parseFile(t, tc.file)
			if len(p.Tables) != 1 {
				t.Fatalf("%d tables, want 1", len(p.Tables))
			}
			tb := p.Tables[0]
			if len(tb.Rows) != tc.rows {
				t.Fatalf("%d rows, want %d", len(tb.Rows), tc.rows)
			}
			first, last := tb.Rows[0], tb.Rows[len(tb.Rows)-1]
			if first.Bytes != tc.first || last.Bytes != tc.last {
				t.Errorf("sizes %d..%d, want %d..%d", first.Bytes, last.Bytes, tc.first, tc.last)
			}
			if tc.lastBusBW != 0 && last.OutOfPlace.BusBW != tc.lastBusBW {
				t.Errorf("last busbw %v, want %v", last.OutOfPlace.BusBW, tc.lastBusBW)
			}
			if tb.Collective != tc.collective || tb.TestsVersion != tc.version {
				t.Errorf("collective %q version %q, want %q %q", tb.Collective, tb.TestsVersion, tc.collective, tc.version)
			}
			if tb.Ranks != tc.ranks || len(tb.Hosts) != tc.hosts {
				t.Errorf("%d ranks on %v, want %d on %d hosts", tb.Ranks, tb.Hosts, tc.ranks, tc.hosts)
			}
			if tb.Elided != tc.elided {
				t.Errorf("elided %v, want %v", tb.Elided, tc.elided)
			}
			if got := first.OutOfPlace.Wrong != nil && last.InPlace.Wrong != nil; got != tc.checked {
				t.Errorf("#wrong read as a count: %v, want %v", got, tc.checked)
			}
			if tc.avg != 0 && (tb.AvgBusBW == nil || *tb.AvgBusBW != tc.avg) {
				t.Errorf("avg busbw %v, want %v", tb.AvgBusBW, tc.avg)
			}
			if first.Type != tc.typ || first.Op != tc.op {
				t.Errorf("type/op %s/%s, want %s/%s", first.Type, first.Op, tc.typ, tc.op)
			}
			for _, r := range tb.Rows {
				if r.OutOfPlace == nil || r.InPlace == nil {
					t.Errorf("row %d B lost a half", r.Bytes)
				}
			}
		})
	}
}

func TestExponentAndWrongCounts(t *testing.T) {
	last := parseFile(t, "g6e-ena-exponent.txt").Tables[0].Rows
	if got := last[len(last)-1].OutOfPlace.TimeUs; got != 1.5e7 {
		t.Errorf("exponent time read as %v, want 1.5e7", got)
	}
	for _, r := range parseFile(t, "wrong-results.txt").Tables[0].Rows {
		want := int64(0)
		if r.Bytes == 1<<28 {
			want = 1024
		}
		if *r.OutOfPlace.Wrong != want {
			t.Errorf("%d B: #wrong %d, want %d", r.Bytes, *r.OutOfPlace.Wrong, want)
		}
	}
}

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	const hdr = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	for _, tc := range []struct{ name, log, want string }{
		{"no table", "NCCL INFO hello\n", "no nccl-tests table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePerf(strings.NewReader(tc.log))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestLinesThatAreNotRowsAreSkippedAndReported: a line inside a table that does not fit its
// header is left out with its line number and why; the table and its other rows stay.
func TestLinesThatAreNotRowsAreSkippedAndReported(t *testing.T) {
	const hdr = "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
	const good = "1048576 262144 float sum -1 40.1 26.1 48.9 0 40.2 26.0 48.9 0\n"
	for _, tc := range []struct{ name, line, want string }{
		{"short row", "0:   1048576   262144   float   sum   -1   40.1   26.1\n", "7 fields where the header has 13"},
		{"text busbw", "1048576 262144 float sum -1 40.1 26.1 x 0 40.2 26.0 48.9 0\n", `out-of-place: busbw "x" is not a number`},
		{"negative size", "-8 2 float sum -1 40.1 26.1 48.9 0 40.2 26.0 48.9 0\n", `size "-8"`},
		{"launcher chatter", "7 more processes have sent help message help-mpi-btl-openib.txt / no active ports found\n", `count "more" is not an element count`},
		{"bad avg", "# Avg bus bandwidth : fast\n", `Avg bus bandwidth "fast"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePerf(strings.NewReader(hdr + good + tc.line + good))
			if err != nil {
				t.Fatalf("one foreign line lost the table: %v", err)
			}
			tb := p.Tables[0]
			if len(tb.Rows) < 1 || len(tb.Skipped) != 1 || tb.Skipped[0].Line != 3 || !strings.Contains(tb.Skipped[0].Reason, tc.want) {
				t.Errorf("rows %d, skipped %+v; want line 3 skipped because %q", len(tb.Rows), tb.Skipped, tc.want)
			}
		})
	}
}

// Two runs in one log stay two tables, each with its own footer.
func TestTwoTables(t *testing.T) {
	one, err := os.ReadFile("testdata/g6e-ena-exponent.txt")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePerf(strings.NewReader(string(one) + string(one)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tables) != 2 || len(p.Tables[1].Rows) != 32 || p.Tables[1].Collective != "all_reduce_perf" || p.Tables[1].Ranks != 8 {
		t.Fatalf("got %d tables: %+v", len(p.Tables), p.Tables)
	}
}

func TestInPlaceOnlyRow(t *testing.T) {
	log := "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"     1048576        262144     float     sum      -1                                    40.20   26.08   48.91      0\n"
	p, err := ParsePerf(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	r := p.Tables[0].Rows[0]
	if r.OutOfPlace != nil || r.InPlace == nil || r.InPlace.BusBW != 48.91 {
		t.Fatalf("row %+v", r)
	}
}

func FuzzParsePerf(f *testing.F) {
	addSeeds(f, "testdata/*.txt")
	f.Fuzz(func(t *testing.T, log string) {
		p, err := ParsePerf(strings.NewReader(log))
		if err != nil {
			return
		}
		for _, tb := range p.Tables {
			for _, r := range tb.Rows {
				if r.Bytes < 0 || (r.OutOfPlace == nil && r.InPlace == nil) {
					t.Fatalf("impossible row %+v", r)
				}
			}
			NewResult("fuzz", tb, nil, "", nil) // must not panic on any table
		}
	})
}

func TestStripPrefix(t *testing.T) {
	const row = "     1048576        262144     float     sum      -1"
	for _, in := range []string{
		"[1,0]<stdout>:" + row, "0: " + row, "1:0: " + row, "2026-11-20T14:03:00.5Z " + row,
		"2026-11-20T14:03:00+01:00 [1,12]<stdout>:" + row, row,
	} {
		if got := stripPrefix(in); got != row {
			t.Errorf("stripPrefix(%q) = %q", in, got)
		}
	}
}

// addSeeds seeds a fuzz target with every fixture matching the pattern.
func addSeeds(f *testing.F, pattern string) {
	names, _ := filepath.Glob(pattern)
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// TestMarkdownRenderedOutput: a GitHub issue body pasted outside a code block loses the '#' of
// nccl-tests' header lines; the rank lines and the column header are still read as such.
func TestMarkdownRenderedOutput(t *testing.T) {
	log := "nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n" +
		"  Rank  0 Group  0 Pid  20114 on   node-a device  0 [0x53] NVIDIA H100 80GB HBM3\n" +
		"  Rank  1 Group  0 Pid  20115 on   node-a device  1 [0x64] NVIDIA H100 80GB HBM3\n" +
		"  Rank  2 Group  0 Pid  31007 on   node-b device  0 [0x53] NVIDIA H100 80GB HBM3\n" +
		"       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n" +
		"        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n" +
		"  1073741824     268435456     float     sum      -1   5210.2  206.08  343.47      0   5205.9  206.25  343.76      0\n"
	p, err := ParsePerf(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if tb := p.Tables[0]; tb.Ranks != 3 || len(tb.Hosts) != 2 || len(tb.Rows) != 1 {
		t.Errorf("ranks %d, hosts %v, rows %d: want 3, 2 hosts, 1 row", tb.Ranks, tb.Hosts, len(tb.Rows))
	}
}

// TestForeignLinesInsideTables: the two public shapes of a table interrupted by other output
// (testdata headers name them): the split row is skipped and reported, the rest read.
func TestForeignLinesInsideTables(t *testing.T) {
	tb := parseFile(t, "split-row-info-lines.txt").Tables[0]
	if len(tb.Rows) != 3 || len(tb.Skipped) != 1 || tb.Skipped[0].Line != 9 || tb.AvgBusBW == nil || tb.Collective != "all_reduce_perf" {
		t.Errorf("rows %d, skipped %+v, avg %v, collective %q: want 3 rows, line 9 skipped, the footer read", len(tb.Rows), tb.Skipped, tb.AvgBusBW, tb.Collective)
	}
	md := parseFile(t, "markdown-no-hash.txt").Tables[0]
	if md.Ranks != 1 || len(md.Rows) != 3 || md.OutOfBounds == nil || md.AvgBusBW == nil {
		t.Errorf("markdown paste: ranks %d, rows %d, footer %v %v", md.Ranks, len(md.Rows), md.OutOfBounds, md.AvgBusBW)
	}
}

// FuzzKubectlTimeEndMatchesRegexp holds the hand-read timestamp prefix to kubectlTime.
func FuzzKubectlTimeEndMatchesRegexp(f *testing.F) {
	for _, s := range []string{
		"2026-11-20T14:05:00Z x", "2026-11-20T14:05:00.123456789Z #", "2026-11-20T14:05:00+02:00 y",
		"2026-11-20T14:05:00.Z x", "2026-11-20T14:05:00Zx", "2026-11-20 14:05:00Z x", "2026-11-20T14:05:00-0200 x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := 0
		if loc := kubectlTime.FindStringIndex(s); loc != nil {
			want = loc[1]
		}
		if got := kubectlTimeEnd(s); got != want {
			t.Fatalf("%q: %d, kubectlTime %d", s, got, want)
		}
	})
}
