package doctor

import (
	"regexp"
	"strings"
)

// rankLabel is what launchers and frameworks put before a traceback's lines ("[rank3]: ", "(VllmWorkerProcess
// pid=142) ERROR … ] "), up to where NCCL's own words start.
var rankLabel = regexp.MustCompile(`^(?:\[rank\d+\]:\s*|\(\w+ pid=\d+\)[^\]]*\]\s*)`)

// Failures are the NCCL failures a job's output reports outside NCCL's INFO lines (the first
// most users bring is a PyTorch traceback, not an INFO log), and every failed record of the log
// by class: NCCL's WARN lines and return-code chains, libfabric's EFA warnings, nccl-tests' own
// failure lines.
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
	// NoEFADevice is libfabric's line saying its EFA provider found no device ("" if none).
	NoEFADevice string

	lastErrorNext bool
	records       failureLog
}

// read takes one line of output and says whether it reported an NCCL failure. Only records
// count: a result name needs PyTorch's "ncclSystemError: System call …" shape and "Last error:"
// must start its line, so prose pasted around a log ("we see ncclSystemError") is not a finding.
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
	// The line without a launcher's label: worked out only for the few lines that need it.
	text := ""
	if f.lastErrorNext || strings.Contains(line, "Last error:") || rec.findOnLine(libfabricRe) != nil || rec.findOnLine(testFailureRe) != nil || rec.findOnLine(hangRe) != nil || rec.findOnLine(crashRe) != nil {
		// Cloned: a connection's line points into its batch's buffer, which is read again.
		text = strings.Clone(strings.TrimSpace(rankLabel.ReplaceAllString(line, "")))
	}
	if f.lastErrorNext {
		f.lastErrorNext = false
		if text != "" {
			f.LastError = text
			mark()
		}
	}
	if m := rec.findOnLine(ncclErrorInRe); m != nil {
		f.Message, f.Version = m[2], m[3]
		mark()
	}
	if m := rec.findOnLine(asyncErrorRe); m != nil && f.Message == "" {
		f.Message, f.Version = m[1], m[2]
		mark()
	}
	if m := rec.findOnLine(resultRe); m != nil && f.Result == "" {
		f.Result = m[1]
		mark()
	}
	if rest, ok := strings.CutPrefix(text, "Last error:"); ok {
		if rest = strings.TrimSpace(rest); rest != "" {
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
	if rec.nccl {
		return found // its WARN and chain lines are read by readNCCL
	}
	if m := rec.findOnLine(libfabricRe); m != nil && !efaLibfabricLine(m[1], m[2]) {
		// Another provider's warning (HPE Slingshot's cxi, verbs, tcp, shm): its provider is
		// named, and nothing of EFA is said of it.
		f.records.record("libfabric-warning", text)
		mark()
	} else if m != nil {
		code := classifyFailure(text) // the function names the failure too: efa_rdm_txe_handle_error()
		switch {
		case pluginFailRe.find(m[2]) != nil:
			// "fi_getinfo: provider efa output empty list": the line that says libfabric found
			// no EFA device; net-plugin-fallback reads it.
			f.NoEFADevice = strings.TrimSpace(m[2])
		case code == "":
			code = "libfabric-efa-warning"
		}
		if code != "" {
			f.records.record(code, text)
		}
		mark()
	}
	if m := rec.findOnLine(testFailureRe); m != nil {
		code := classifyFailure(text)
		switch {
		case strings.Contains(m[0], "timeout"):
			code = "collective-timeout"
		case code == "" && len(f.records.order) > 0:
			// " .. host pid N: Test failure common.cu:915" after the failure it reports
		case code == "":
			code = "nccl-error"
		}
		if code != "" {
			f.records.record(code, text)
		}
		mark()
	}
	if rec.findOnLine(hangRe) != nil {
		f.records.record("collective-timeout", text)
		mark()
	}
	if rec.findOnLine(crashRe) != nil {
		f.records.record("process-crashed", text)
		mark()
	}
	return found
}

// efaLibfabricLine says whether a libfabric warning is EFA's: its provider field is efa, or
// libfabric's core speaks of the efa provider ("fi_getinfo: provider efa output empty list").
func efaLibfabricLine(provider, message string) bool {
	return provider == "efa" || (provider == "core" || provider == "") && efaProviderWord.MatchString(message)
}

var efaProviderWord = regexp.MustCompile(`\befa\b`)

// failureFindings say what the failures mean: a traceback's by the class its last error
// supports (else by NCCL's result), then each class of failed records the log holds, once.
func failureFindings(l *Log, add func(code, severity, evidence, cause, fix string)) {
	f := &l.Failures
	f.records.settle()
	evidence := func(parts ...string) string {
		var out []string
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return strings.Join(out, "; ")
	}
	// The records first: a chain's first record is the evidence of its class, before the
	// traceback that reports the same failure later (one finding per class keeps the first).
	for _, x := range f.records.order {
		if f.Shm != "" && (x.code == "shm-too-small" || x.code == "shm-segment-failed") {
			continue // the segment's finding below quotes them
		}
		if x.code == "shm-segment-failed" && f.records.byCode["shm-too-small"] != nil {
			continue // the segment failed because /dev/shm is full: one finding
		}
		addFailure(add, x.code, x.evidence, x.count)
	}
	result := strings.TrimSpace(f.Result + " " + f.Message)
	class := classifyFailure(f.LastError)
	if class == "" {
		class = classifyFailure(f.Message)
	}
	switch {
	case f.Shm != "":
		code := "shm-too-small"
		first := ""
		switch x := f.records.byCode["shm-too-small"]; {
		case x != nil:
			first = x.evidence // the chain's first record: the ENOSPC line that caused the rest
		case class == "shm-too-small":
		default:
			code = "shm-segment-failed"
		}
		addFailure(add, code, evidence(first, "Error while creating shared memory segment "+f.Shm+" (size "+f.ShmSize+")", f.Result), 1)
	case class != "":
		addFailure(add, class, evidence(result, f.LastError), 1)
	case f.Result == "ncclRemoteError":
		addFailure(add, "nccl-remote-error", evidence(f.Result, f.LastError), 1)
	case result != "":
		addFailure(add, "nccl-error", evidence(result, f.LastError), 1)
	}
	if f.Watchdog != "" {
		addFailure(add, "collective-timeout", "Watchdog caught collective operation timeout: "+f.Watchdog+" ran for "+f.WatchdogMs+" ms", 1)
	}
}
