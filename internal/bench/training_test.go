package bench

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

func parseTrainingFile(t *testing.T, name string) *Training {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ParseTraining(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr
}

// spanOfFile is the test's own reading of a fixture's clock: the first and last time a line
// pattern carries, parsed with the given layout.
func spanOfFile(t *testing.T, name string, re *regexp.Regexp, layout string) float64 {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var first, last time.Time
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			at, err := time.Parse(layout, m[1])
			if err != nil {
				t.Fatal(err)
			}
			if first.IsZero() {
				first = at
			}
			last = at
		}
	}
	return last.Sub(first).Seconds()
}

func TestTrainingLogs(t *testing.T) {
	efa := parseTrainingFile(t, "train-g6e-efa-kubectl.txt")
	want := spanOfFile(t, "train-g6e-efa-kubectl.txt", regexp.MustCompile(`^(\S+Z) `), time.RFC3339Nano)
	if efa.TimestampSource != "kubectl" || math.Abs(efa.WallClockSeconds-want) > 1e-6 || !efa.Finished || efa.FailedLine != 0 {
		t.Errorf("g6e-efa: %+v, want kubectl wall clock %.3f s, finished", efa, want)
	}
	if efa.TrainerRuntimeSeconds == nil || *efa.TrainerRuntimeSeconds != 2441 || efa.SamplesPerSecond == nil || efa.StepsPerSecond == nil {
		t.Errorf("g6e-efa trainer figures (string-valued metrics): %+v", efa)
	}
	// Without kubectl's clock: torch's glog lines span the run, DeepSpeed's only its start.
	ena := parseTrainingFile(t, "train-g6e-ena-glog.txt")
	want = spanOfFile(t, "train-g6e-ena-glog.txt", regexp.MustCompile(`^[IWEF]\d{4} (\d\d:\d\d:\d\d\.\d{6}) `), "15:04:05.000000")
	if ena.TimestampSource != "glog" || math.Abs(ena.WallClockSeconds-want) > 1e-6 || ena.TrainerRuntimeSeconds == nil || *ena.TrainerRuntimeSeconds != 5408 {
		t.Errorf("g6e-ena: %+v, want glog wall clock %.3f s and runtime 5408", ena, want)
	}
	failed := parseTrainingFile(t, "train-rank-failed.txt")
	if failed.FailedLine == 0 || !strings.Contains(failed.Failure, "ChildFailedError") || failed.Finished {
		t.Errorf("rank failure: %+v", failed)
	}
	// glog has no year: 31 December 23:58:30 to 1 January 00:11:02.5 is 752.5 s, not minus a year.
	cut := parseTrainingFile(t, "train-new-year-cut.txt")
	if cut.WallClockSeconds != 752.5 || cut.Finished || cut.FailedLine != 0 {
		t.Errorf("new year, cut short: %+v", cut)
	}
	if r := NewTrainingResult("x", cut, nil, "", nil); r.Verdict.Status != Unknown {
		t.Errorf("a run cut short is %s, want unknown", r.Verdict.Status)
	}
	if r := NewTrainingResult("x", failed, nil, "", nil); r.Verdict.Status != Fail {
		t.Errorf("a failed rank is %s, want fail", r.Verdict.Status)
	}
	if r := NewTrainingResult("x", efa, nil, "", nil); r.Verdict.Status != Pass {
		t.Errorf("a finished run is %s, want pass", r.Verdict.Status)
	}
}

// A traceback the run survived (a logger's) does not fail a run that finished.
func TestTrainingSurvivedTraceback(t *testing.T) {
	log := "[2026-03-04 09:00:00,000] [INFO] start\nTraceback (most recent call last):\nwandb.errors.CommError: retrying\n" +
		"{'train_runtime': 12.5, 'train_samples_per_second': 3.0, 'epoch': 1.0}\n[2026-03-04 09:00:14,250] [INFO] done\n"
	tr, err := ParseTraining(strings.NewReader(log))
	if err != nil || tr.FailedLine != 0 || !tr.Finished || tr.WallClockSeconds != 14.25 {
		t.Fatalf("%+v %v", tr, err)
	}
	if _, err := ParseTraining(strings.NewReader("hello\nworld\n")); err == nil {
		t.Error("a log without clock or trainer line is not a training run")
	}
}

func FuzzParseTraining(f *testing.F) {
	addSeeds(f, "testdata/train-*.txt")
	f.Fuzz(func(t *testing.T, log string) {
		tr, err := ParseTraining(strings.NewReader(log))
		if err != nil {
			return
		}
		if tr.WallClockSeconds < 0 || (tr.TimestampSource != "" && (tr.FirstLine == 0 || tr.LastLine == 0)) {
			t.Fatalf("impossible %+v", tr)
		}
		NewTrainingResult("fuzz", tr, nil, "", nil)
	})
}

// TestTrainingClockLeavesOutEFAReadings: a training pod's readings of its node's EFA counters,
// right before torchrun and right after it (a reader slow to answer takes up to ten seconds),
// are not part of the run's wall clock.
func TestTrainingClockLeavesOutEFAReadings(t *testing.T) {
	log, err := os.ReadFile(filepath.Join("testdata", "train-g6e-efa-kubectl.txt"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := ParseTraining(strings.NewReader(string(log)))
	if err != nil {
		t.Fatal(err)
	}
	reading := func(at, phase string) string {
		return at + " " + topology.EFACounterLine(phase, "node-a", "rdmap79s0", map[string]uint64{topology.EFATxBytes: 1}) + "\n"
	}
	wrapped := reading("2026-03-04T09:02:00.000000000Z", topology.EFAPhaseBefore) + string(log) + reading("2026-03-04T10:30:00.000000000Z", topology.EFAPhaseAfter)
	got, err := ParseTraining(strings.NewReader(wrapped))
	if err != nil {
		t.Fatal(err)
	}
	if got.WallClockSeconds != plain.WallClockSeconds || got.FirstLine != plain.FirstLine+1 || got.LastLine != plain.LastLine+1 {
		t.Errorf("with the readings: %.0f s, lines %d to %d; without: %.0f s, lines %d to %d",
			got.WallClockSeconds, got.FirstLine, got.LastLine, plain.WallClockSeconds, plain.FirstLine, plain.LastLine)
	}
}
