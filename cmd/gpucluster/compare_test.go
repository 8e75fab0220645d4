package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/bench"
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
	runs := loadRuns(t, efa, ena)
	shared := 0
	for _, size := range bench.Sizes(runs) {
		a, okA := runs[0].BusBW(size)
		b, okB := runs[1].BusBW(size)
		if okA && okB && a > 0 {
			shared++
			if want := fmt.Sprintf(" %.2f | %.2f (×%.2f) |", a, b, b/a); !strings.Contains(md, want) {
				t.Errorf("no cell %q for size %d in\n%s", want, size, md)
			}
		}
	}
	if shared < 10 || !strings.Contains(md, "| g6e-efa | g6e-ena |") || !strings.Contains(md, "(ratio to g6e-efa)") {
		t.Errorf("%d shared sizes; table:\n%s", shared, md)
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
	runs := loadRuns(t, efa, ena)
	a, b := runs[0].Training, runs[1].Training
	want := fmt.Sprintf("| g6e-ena-train | %.0f (×%.2f) | %.1f (×%.2f) |", b.WallClockSeconds, b.WallClockSeconds/a.WallClockSeconds,
		*b.TrainerRuntimeSeconds, *b.TrainerRuntimeSeconds / *a.TrainerRuntimeSeconds)
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "bus bandwidth") {
		t.Errorf("want row %q and no busbw table in\n%s", want, out.String())
	}
	errOut.Reset()
	if code := run([]string{"bench", "compare", efa, ena, "--svg", filepath.Join(dir, "x.svg")}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "no run has an nccl-tests table") {
		t.Errorf("--svg of training runs: exit %d %s", code, errOut.String())
	}
}

// loadRuns reads result files as bench compare does.
func loadRuns(t *testing.T, files ...string) []bench.Run {
	t.Helper()
	var runs []bench.Run
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := bench.LoadRuns(f, raw)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, rs...)
	}
	return runs
}
