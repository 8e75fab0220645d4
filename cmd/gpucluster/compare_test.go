package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportJSON runs bench report --json on a fixture and writes the result file.
func reportJSON(t *testing.T, dir, fixture, name string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "report", "--log", benchData + fixture, "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("bench report %s: exit %d: %s", fixture, code, errOut.String())
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBenchCompare: EFA against ENA on g6e is one command; every cell is the run's own busbw
// and its ratio to the first run, and the chart is written only where compare may write.
func TestBenchCompare(t *testing.T) {
	dir := t.TempDir()
	efa := reportJSON(t, dir, "per-iteration-g6e.txt", "g6e-efa.json")
	ena := reportJSON(t, dir, "g6e-ena-exponent.txt", "g6e-ena.json")
	svg := filepath.Join(dir, "busbw.svg")
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "compare", efa, ena, "--svg", svg}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	md := out.String()
	// Cells read off the fixtures' out-of-place busbw columns by hand: the EFA run sweeps 1 KiB
	// to 256 MiB, the ENA run 8 B to 16 GiB, so 19 sizes have both (the ratio) and 13 one only.
	for _, cell := range []string{
		"| 1 KiB | 0.01 | 0.02 (×2.00) |",
		"| 1 MiB | 7.84 | 1.75 (×0.22) |",
		"| 256 MiB | 17.27 | 1.91 (×0.11) |",
		"| 8 B | – | 0.00 |",
		"| 16 GiB | – | 1.94 |",
	} {
		if !strings.Contains(md, cell) {
			t.Errorf("no row %q in\n%s", cell, md)
		}
	}
	if both, one := strings.Count(md, " (×"), strings.Count(md, "| – |"); both != 19 || one != 13 ||
		!strings.Contains(md, "| g6e-efa | g6e-ena |") || !strings.Contains(md, "(ratio to g6e-efa)") {
		t.Errorf("%d sizes with both runs, %d with one; want 19 and 13; table:\n%s", both, one, md)
	}
	chart, err := os.ReadFile(svg)
	if err != nil || !bytes.Contains(chart, []byte(svgMarker)) || bytes.Count(chart, []byte("<polyline")) != 2 {
		t.Fatalf("chart %v:\n%s", err, chart)
	}
	// A second run may replace its own chart; a file of the user's is never touched.
	if code := run([]string{"bench", "compare", efa, ena, "--svg", svg}, &out, &errOut); code != 0 {
		t.Errorf("replacing compare's own chart: exit %d: %s", code, errOut.String())
	}
	mine := filepath.Join(dir, "notes.svg")
	os.WriteFile(mine, []byte("<svg>my drawing</svg>"), 0o644)
	errOut.Reset()
	if code := run([]string{"bench", "compare", efa, ena, "--svg", mine}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "not a chart gpucluster wrote") {
		t.Errorf("overwriting a user's file: exit %d: %s", code, errOut.String())
	}
	if got, _ := os.ReadFile(mine); string(got) != "<svg>my drawing</svg>" {
		t.Errorf("the user's file changed: %s", got)
	}
}

func TestBenchCompareBadInput(t *testing.T) {
	dir := t.TempDir()
	efa := reportJSON(t, dir, "per-iteration-g6e.txt", "efa.json")
	notJSON := filepath.Join(dir, "log.txt")
	os.WriteFile(notJSON, []byte("# nccl-tests text, not a result\n"), 0o644)
	// A wrong command line is a usage error (2); a file that cannot be read as a result is
	// unreadable input (4), as for every command.
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{efa}, exitUsage, "give at least two"},
		{[]string{efa, notJSON}, exitUnreadable, "not the JSON of gpucluster bench report --json"},
		{[]string{efa, filepath.Join(dir, "missing.json")}, exitUnreadable, "no such file"},
		{[]string{}, exitUsage, "usage: gpucluster bench compare"},
	} {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"bench", "compare"}, tc.args...), &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errOut.String(), tc.code, tc.want)
		}
	}
}

// TestBenchCompareTraining: the field comparison (g6e over EFA against ENA) from two training
// logs: wall clocks and trainer runtimes side by side, with ENA's ratio to EFA.
func TestBenchCompareTraining(t *testing.T) {
	dir := t.TempDir()
	efa := reportJSON(t, dir, "train-g6e-efa-kubectl.txt", "g6e-efa-train.json")
	ena := reportJSON(t, dir, "train-g6e-ena-glog.txt", "g6e-ena-train.json")
	var out, errOut bytes.Buffer
	if code := run([]string{"bench", "compare", efa, ena}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	// Worked from the fixtures by hand: wall clocks from the first to the last timestamp
	// (09:12:03.414 to 09:53:09.814 is 2,466.4 s; 13:40:17.529 to 15:10:48.829 is 5,431.3 s,
	// x2.20), trainer runtimes 2,441 and 5,408 s (x2.22).
	want := "| g6e-ena-train | 5431 (×2.20) | 5408.0 (×2.22) |"
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "bus bandwidth") {
		t.Errorf("want row %q and no busbw table in\n%s", want, out.String())
	}
	errOut.Reset()
	if code := run([]string{"bench", "compare", efa, ena, "--svg", filepath.Join(dir, "x.svg")}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "no run has an nccl-tests table") {
		t.Errorf("--svg of training runs: exit %d %s", code, errOut.String())
	}
}
