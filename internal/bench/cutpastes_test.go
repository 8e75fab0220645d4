package bench

import (
	"strings"
	"testing"
)

// Tables a person reads though their paste lost the column header, or a launcher tags every
// line (issue 52, class 10): read by nccl-tests' row shape, saying what was assumed.
func TestTablesAPersonReads(t *testing.T) {
	noHeader := parseFile(t, "no-header-rows.txt").Tables
	if len(noHeader) != 1 || len(noHeader[0].Rows) != 12 || noHeader[0].AvgBusBW == nil || noHeader[0].Binary != "all_reduce_perf" {
		t.Fatalf("a table without its header: %+v", noHeader)
	}
	nh := noHeader[0]
	if !strings.Contains(nh.Assumed, "nccl-tests 2.13 or later (a #wrong count), 13 fields") || nh.Rows[11].Bytes != 2<<30 || nh.Rows[11].OutOfPlace.Wrong == nil {
		t.Errorf("assumed %q, last row %+v", nh.Assumed, nh.Rows[11])
	}
	for _, name := range []string{"rank-tagged-rows.txt", "srun-padded-labels.txt"} {
		tables := parseFile(t, name).Tables
		if len(tables) != 1 || len(tables[0].Rows) != 4 || tables[0].AvgBusBW == nil || tables[0].OutOfBounds == nil || len(tables[0].Skipped) != 0 || tables[0].Assumed != "" {
			t.Errorf("%s: %+v", name, tables)
			continue
		}
		if got := tables[0].Rows[0].InPlace; got == nil || got.TimeUs != 23.47 {
			t.Errorf("%s: first row's in-place half %+v", name, got)
		}
	}
	// The shapes before 2.13: the check column is the largest deviation.
	for line, want := range map[string]string{
		"     1048576        262144     float     sum    131.1    8.00   14.00  1e-07    129.4    8.10   14.20  0e+00":        "size count type redop time algbw busbw error time algbw busbw error",
		"     1048576         32768     float             58.1   18.04   15.78  0e+00     57.9   18.12   15.85  1e+00":        "size count type time algbw busbw error time algbw busbw error",
		"     1048576        262144     float       0    131.1    8.00    8.00  0e+00    129.4    8.10    8.10  0e+00":        "size count type root time algbw busbw error time algbw busbw error",
		"     1048576        262144     float     sum      -1    44.6   23.48   44.03      0     45.6   22.99   43.10      0": "size count type redop root time algbw busbw #wrong time algbw busbw #wrong",
	} {
		_, assumed, ok := assumeColumns(strings.Fields(line))
		if !ok || !strings.HasSuffix(assumed, want) {
			t.Errorf("%q: %q (%v), want …%s", line, assumed, ok, want)
		}
	}
	for _, notARow := range []string{"100 200 3 4 5 6 7 8 9 10 11 12 13", "1048576 262144 float sum -1 44.6"} {
		if _, _, ok := assumeColumns(strings.Fields(notARow)); ok {
			t.Errorf("%q read as a row", notARow)
		}
	}
}
