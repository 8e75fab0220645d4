package doctor

import (
	"regexp"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// rankLabel is what launchers and frameworks put before a traceback's lines ("[rank3]: ", "(VllmWorkerProcess
// pid=142) ERROR … ] "), up to where NCCL's own words start.
var rankLabel = regexp.MustCompile(`^(?:\[rank\d+\]:\s*|\(\w+ pid=\d+\)[^\]]*\]\s*)`)

// Failures are the NCCL failures a job's output reports outside NCCL's INFO lines: the first
// most users bring is a PyTorch traceback, not an INFO log.
type Failures struct {
	// Result is NCCL's result name (ncclSystemError, ncclRemoteError, …) and Message PyTorch's
	// words for it ("unhandled system error …"); Version as the error states it.
	Result, Message, Version string
	// LastError is NCCL's detail ("Last error:" and the line after it), the most telling line.
	LastError string
	// Shm is NCCL's failure to create a shared-memory segment: the segment and its size.
	Shm, ShmSize string
	// Watchdog is PyTorch's collective timeout: the work and how long it ran (ms).
	Watchdog, WatchdogMs string
	// Line is the first line that reported a failure.
	Line int

	lastErrorNext bool
}

// read takes one line of output and says whether it reported an NCCL failure.
func (f *Failures) read(rec *record, n int) bool {
	line := rec.line
	// Whether the line can report a failure by itself was decided with its record (mayReportFailure).
	if !f.lastErrorNext && !rec.failuresRead {
		return false
	}
	found := false
	mark := func() {
		found = true
		if f.Line == 0 {
			f.Line = n
		}
	}
	if f.lastErrorNext {
		f.lastErrorNext = false
		if t := strings.TrimSpace(rankLabel.ReplaceAllString(line, "")); t != "" {
			f.LastError = t
			mark()
		}
	}
	if m := rec.findOnLine(ncclErrorInRe); m != nil {
		f.Message, f.Version = m[2], m[3]
		mark()
	}
	if m := rec.findOnLine(resultRe); m != nil && f.Result == "" {
		f.Result = m[1]
		mark()
	}
	if i := strings.Index(line, "Last error:"); i >= 0 {
		if rest := strings.TrimSpace(line[i+len("Last error:"):]); rest != "" {
			f.LastError = rest
		} else {
			f.lastErrorNext = true // PyTorch prints the detail on the next line
		}
		mark()
	}
	if m := rec.findOnLine(shmSegmentRe); m != nil {
		f.Shm, f.ShmSize = m[1], m[2]
		mark()
	}
	if m := rec.findOnLine(watchdogRe); m != nil && f.Watchdog == "" {
		f.Watchdog, f.WatchdogMs = m[1], m[2]
		mark()
	}
	return found
}

// failureFindings say what the failures a traceback reports mean: the most specific first (a
// shared-memory segment NCCL could not create), else by NCCL's result.
func failureFindings(f Failures, add func(code, severity, evidence, cause, fix string)) {
	evidence := func(parts ...string) string {
		var out []string
		for _, p := range parts {
			if p != "" {
				out = append(out, p)
			}
		}
		return strings.Join(out, "; ")
	}
	switch {
	case f.Shm != "":
		add("shm-too-small", topology.SeverityError,
			evidence("Error while creating shared memory segment "+f.Shm+" (size "+f.ShmSize+")", f.Result),
			"NCCL could not create its shared-memory buffers in /dev/shm: a container's /dev/shm is 64 MiB unless something larger is mounted there (Docker's default, and Kubernetes' without a memory-backed volume), too small for the buffers NCCL sizes by its channels",
			"in Kubernetes, mount an emptyDir volume with medium: Memory at /dev/shm (gpucluster's training pod template does, sized by the pool's shmSize); with Docker, run with --shm-size=… or --ipc=host")
	case f.Result == "ncclRemoteError":
		add("nccl-remote-error", topology.SeverityError, evidence(f.Result, f.LastError),
			"a peer went away or the network between two ranks failed: NCCL on this rank only saw the connection end",
			"read the log of the rank that failed first (the earliest error, or the one whose process exited), and check the network path between the two hosts")
	case f.Result != "" || f.Message != "":
		add("nccl-error", topology.SeverityError, evidence(strings.TrimSpace(f.Result+" "+f.Message), f.LastError),
			"NCCL returned an error to the framework; its \"Last error\" line says which call failed",
			"rerun with NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET) and pass that log: the lines before the error say what NCCL was doing")
	}
	if f.Watchdog != "" {
		add("collective-timeout", topology.SeverityError, "Watchdog caught collective operation timeout: "+f.Watchdog+" ran for "+f.WatchdogMs+" ms",
			"a collective did not complete in time on every rank: one rank stopped taking part (it crashed, hung or lags far behind), or the network stalled",
			"find the rank that did not reach the collective (the first error or exit in the other ranks' logs); raising the timeout only hides a hang")
	}
}
