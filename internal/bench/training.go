package bench

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/internal/efareading"
)

// Training is what a training job's log says about the run: its wall clock, from the first to
// the last timestamped line (the EFA counter readings around torchrun left out), and the trainer's own figures when it prints them.
type Training struct {
	// WallClockSeconds spans the first to the last timestamped line; TimestampSource says which
	// timestamps ("kubectl", "datetime" for [2024-11-16 18:21:14,195]-style lines, "glog" for
	// torch ≥ 2.3's W1114 17:59:52.294000 lines), and First/LastLine where they are.
	WallClockSeconds float64 `json:"wallClockSeconds,omitempty"`
	TimestampSource  string  `json:"timestampSource,omitempty"`
	FirstLine        int     `json:"firstLine,omitempty"`
	LastLine         int     `json:"lastLine,omitempty"`
	// TrainerRuntimeSeconds is the trainer's own train_runtime (Hugging Face Trainer's final
	// metrics line), SamplesPerSecond and StepsPerSecond beside it; RuntimeLine where it is.
	TrainerRuntimeSeconds *float64 `json:"trainerRuntimeSeconds,omitempty"`
	SamplesPerSecond      *float64 `json:"samplesPerSecond,omitempty"`
	StepsPerSecond        *float64 `json:"stepsPerSecond,omitempty"`
	RuntimeLine           int      `json:"runtimeLine,omitempty"`
	// Finished: the trainer printed its final metrics or torchrun's agent reported its worker
	// group finished. FailedLine is the first line that says a rank failed (torchrun's
	// ChildFailedError; or a traceback in a run that never finished), 0 for none.
	Finished   bool   `json:"finished"`
	FailedLine int    `json:"failedLine,omitempty"`
	Failure    string `json:"failure,omitempty"`
}

var (
	// kubectl logs --timestamps puts an RFC 3339 time (nanoseconds) first on the line.
	kubectlTime = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) `)
	// Python logging's default and DeepSpeed's "[2024-11-16 18:21:14,195]", torch < 2.3's
	// "[2023-05-01 12:00:00,123] torch.distributed.run: [WARNING]", with or without brackets.
	datetimeTime = regexp.MustCompile(`^\[?(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d)(?:[,.](\d{1,6}))?\]?\s`)
	// glog, as torch ≥ 2.3 logs: "W1114 17:59:52.294000 3097815 torch/distributed/run.py:774]".
	glogTime = regexp.MustCompile(`^[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d{6}) +\d+ \S+:\d+\]`)
	// Hugging Face Trainer's final metrics, values as numbers or (newer releases) strings.
	trainRuntime = regexp.MustCompile(`'train_runtime': '?([0-9.]+)'?`)
	samplesRate  = regexp.MustCompile(`'train_samples_per_second': '?([0-9.]+)'?`)
	stepsRate    = regexp.MustCompile(`'train_steps_per_second': '?([0-9.]+)'?`)
	// torchrun's agent once every local rank exited 0.
	groupFinished = regexp.MustCompile(`worker group successfully finished`)
	// A rank died: torchrun's ChildFailedError summary; an uncaught Python exception, printed
	// bare or (torch ≥ 2.2) behind "[rank3]: ".
	childFailed = regexp.MustCompile(`errors\.ChildFailedError`)
	traceback   = regexp.MustCompile(`^(?:\[rank\d+\]:\s*)?Traceback \(most recent call last\):`)
)

// ParseTraining reads a training job's log (one pod's, or several concatenated). Launcher and
// kubectl prefixes are read as in nccl-tests logs.
func ParseTraining(r io.Reader) (*Training, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	t := &Training{}
	spans := map[string]*span{}
	tracebackLine, tracebackText := 0, ""
	n := 0
	for sc.Scan() {
		n++
		raw := strings.TrimRight(sc.Text(), "\r")
		if efareading.Holds(raw) {
			continue // gpucluster's own readings, before torchrun starts and after it ends
		}
		if m := kubectlTime.FindStringSubmatch(raw); m != nil {
			if at, err := time.Parse(time.RFC3339Nano, m[1]); err == nil {
				spanOf(spans, "kubectl").see(at, n)
			}
		}
		line := strings.TrimSpace(stripPrefix(raw))
		if at, ok := datetimeAt(line); ok {
			spanOf(spans, "datetime").see(at, n)
		} else if at, ok := glogAt(line, spans["glog"]); ok {
			spanOf(spans, "glog").see(at, n)
		}
		if m := trainRuntime.FindStringSubmatch(line); m != nil {
			t.TrainerRuntimeSeconds, t.RuntimeLine, t.Finished = number(m[1]), n, true
			t.SamplesPerSecond, t.StepsPerSecond = nil, nil
			if m := samplesRate.FindStringSubmatch(line); m != nil {
				t.SamplesPerSecond = number(m[1])
			}
			if m := stepsRate.FindStringSubmatch(line); m != nil {
				t.StepsPerSecond = number(m[1])
			}
		}
		if groupFinished.MatchString(line) {
			t.Finished = true
		}
		if t.FailedLine == 0 && childFailed.MatchString(line) {
			t.FailedLine, t.Failure = n, line
		}
		if tracebackLine == 0 && traceback.MatchString(line) {
			tracebackLine, tracebackText = n, line
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %v", n+1, err)
	}
	// A traceback in a run that finished was survived (a logger's, a retried download).
	if t.FailedLine == 0 && tracebackLine > 0 && !t.Finished {
		t.FailedLine, t.Failure = tracebackLine, tracebackText
	}
	// The container's own clock (kubectl) first: every line carries it. Else the logger whose
	// lines span the longest: DeepSpeed may log only at start, torch's agent also at the end.
	// (Two loggers' clocks are not mixed: glog has no year.)
	best := ""
	for _, source := range []string{"kubectl", "datetime", "glog"} {
		s := spans[source]
		if s == nil || s.lines < 2 {
			continue
		}
		if best == "" || (best != "kubectl" && s.last.Sub(s.first) > spans[best].last.Sub(spans[best].first)) {
			best = source
		}
	}
	if s := spans[best]; s != nil {
		t.TimestampSource, t.FirstLine, t.LastLine = best, s.firstLine, s.lastLine
		t.WallClockSeconds = s.last.Sub(s.first).Seconds()
	}
	if t.TimestampSource == "" && t.TrainerRuntimeSeconds == nil {
		return nil, fmt.Errorf("no training run: no timestamped lines (kubectl logs --timestamps, logging time stamps) and no trainer runtime line")
	}
	return t, nil
}

// span is the first and last time one kind of timestamp showed.
type span struct {
	first, last         time.Time
	firstLine, lastLine int
	lines               int
}

func spanOf(spans map[string]*span, source string) *span {
	if spans[source] == nil {
		spans[source] = &span{}
	}
	return spans[source]
}

func (s *span) see(at time.Time, line int) {
	if s.lines == 0 || at.Before(s.first) {
		s.first, s.firstLine = at, line
	}
	if s.lines == 0 || !at.Before(s.last) {
		s.last, s.lastLine = at, line
	}
	s.lines++
}

func datetimeAt(line string) (time.Time, bool) {
	m := datetimeTime.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	at, err := time.Parse("2006-01-02 15:04:05", strings.Replace(m[1], "T", " ", 1))
	if err != nil {
		return time.Time{}, false
	}
	if m[2] != "" {
		frac, _ := strconv.Atoi((m[2] + "000000")[:6])
		at = at.Add(time.Duration(frac) * time.Microsecond)
	}
	return at, true
}

// glogAt reads a glog time, which has no year: the year of the previous glog line, or the
// next one when the date went back (a run over New Year).
func glogAt(line string, prev *span) (time.Time, bool) {
	m := glogTime.FindStringSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	year := 2000 // a leap year, so that 29 February reads
	if prev != nil && prev.lines > 0 {
		year = prev.last.Year()
	}
	parse := func(y int) (time.Time, error) {
		return time.Parse("2006-01-02 15:04:05.000000", fmt.Sprintf("%04d-%s-%s %s.%s", y, m[1], m[2], m[3], m[4]))
	}
	at, err := parse(year)
	if err != nil {
		return time.Time{}, false
	}
	if prev != nil && prev.lines > 0 && at.Before(prev.last.Add(-24*time.Hour)) {
		if next, err := parse(year + 1); err == nil {
			at = next
		}
	}
	return at, true
}

func number(s string) *float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil
	}
	return &f
}
