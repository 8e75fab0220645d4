package health

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
)

// Diag is what `dcgmi diag -j` said, as the job's log carries it: the JSON document, then the
// marker line with dcgmi's exit code.
type Diag struct {
	Version  string
	Tests    int      // tests that reported a result
	Failures []string // "memory GPU0: A memory mismatch was detected …", one per failed result
	// Notes are errors that do not take a GPU out of service: a node setting (persistence mode)
	// or a counter to watch (DCGM's CONFIG and MONITOR severities).
	Notes        []string
	RuntimeError string
	ExitCode     int // -1: the log has no marker line (the container was cut short)
}

// DCGM error severities (NVIDIA/DCGM v4.6.0 dcgmlib/dcgm_errors.h dcgmErrorSeverity_t) whose
// errors say something about the node's setup or a counter to watch, not a GPU to take out.
const (
	diagSeverityMonitor = 1
	diagSeverityConfig  = 5
)

// diagDoc is the JSON both DCGM 4 ("DCGM Diagnostic", results per entity) and DCGM 3 ("DCGM GPU
// Diagnostic", results per gpu_id, a string, or an int in the Deployment tests) write
// (NVIDIA/DCGM v4.6.0 and v3.3.9 dcgmi/Diag.cpp, nvvs/include/NvvsJsonStrings.h).
type diagDoc struct {
	V4       *diagBody      `json:"DCGM Diagnostic"`
	V3       *diagBody      `json:"DCGM GPU Diagnostic"`
	Metadata map[string]any `json:"metadata"`
	Version  string         `json:"version"` // DCGM 3: at the top
}

type diagBody struct {
	Version        string `json:"version"`
	RuntimeError   string `json:"runtime_error"`
	TestCategories []struct {
		Category string `json:"category"`
		Tests    []struct {
			Name    string `json:"name"`
			Results []struct {
				EntityGroup string          `json:"entity_group"`
				EntityID    json.RawMessage `json:"entity_id"`
				GPUID       json.RawMessage `json:"gpu_id"`
				Status      string          `json:"status"`
				Warnings    []struct {
					Warning  string `json:"warning"`
					Severity int    `json:"error_severity"`
					ErrorID  int    `json:"error_id"`
				} `json:"warnings"`
			} `json:"results"`
		} `json:"tests"`
	} `json:"test_categories"`
}

// ParseDiag reads a diagnostics job's log.
func ParseDiag(log string) (*Diag, error) {
	d := &Diag{ExitCode: -1}
	if i := strings.LastIndex(log, topology.DiagExitMarker); i >= 0 {
		rest := log[i+len(topology.DiagExitMarker):]
		if n, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0])); err == nil {
			d.ExitCode = n
		}
		log = log[:i]
	}
	start := strings.Index(log, "{")
	if start < 0 {
		return d, fmt.Errorf("no JSON document from dcgmi diag -j")
	}
	var doc diagDoc
	if err := json.NewDecoder(strings.NewReader(log[start:])).Decode(&doc); err != nil {
		return d, fmt.Errorf("dcgmi's JSON: %v", err)
	}
	body := doc.V4
	d.Version = doc.Version
	if v, ok := doc.Metadata["version"].(string); ok {
		d.Version = v
	}
	if body == nil {
		body = doc.V3
	}
	if body == nil {
		return d, fmt.Errorf(`dcgmi's JSON has neither "DCGM Diagnostic" (DCGM 4) nor "DCGM GPU Diagnostic" (DCGM 3)`)
	}
	if body.Version != "" && d.Version == "" {
		d.Version = body.Version
	}
	d.RuntimeError = body.RuntimeError
	for _, cat := range body.TestCategories {
		for _, t := range cat.Tests {
			for _, res := range t.Results {
				d.Tests++
				if res.Status != "Fail" {
					continue
				}
				where := t.Name + " " + entity(res.EntityGroup, res.EntityID, res.GPUID)
				isolates := len(res.Warnings) == 0
				var msgs []string
				for _, w := range res.Warnings {
					msgs = append(msgs, strings.TrimSpace(w.Warning))
					if w.Severity != diagSeverityConfig && w.Severity != diagSeverityMonitor {
						isolates = true
					}
				}
				line := where + ": " + orText(strings.Join(msgs, " "), "failed, with no message")
				if isolates {
					d.Failures = append(d.Failures, line)
				} else {
					d.Notes = append(d.Notes, line)
				}
			}
		}
	}
	return d, nil
}

// entity names a result's GPU (DCGM 4: entity_group and entity_id; DCGM 3: gpu_id).
func entity(group string, id, gpuID json.RawMessage) string {
	raw := id
	if len(raw) == 0 {
		raw, group = gpuID, "GPU"
	}
	if group == "" {
		group = "GPU"
	}
	return group + strings.Trim(string(raw), `"`)
}

func orText(s, none string) string {
	if s == "" {
		return none
	}
	return s
}

// judgeDiag is the diagnostics' verdict: a failed result that isolates a GPU fails the node;
// a dcgmi that did not complete (no JSON, a runtime error, an exit code other than 0, 205 and
// 226) says nothing either way.
func judgeDiag(level int, state jobState, log string) Check {
	c := Check{Name: topology.HealthCheckDiag}
	d, err := ParseDiag(log)
	switch {
	case err != nil && state.Ended == "":
		c.Status, c.Evidence = Unknown, "did not finish: "+orText(state.Reason, "the run ended first")
	case err != nil:
		c.Status, c.Evidence = Unknown, fmt.Sprintf("%v (job %s: %s)", err, state.Ended, orText(state.Reason, "no reason given"))
	case d.RuntimeError != "":
		c.Status, c.Evidence = Unknown, "dcgmi could not run the diagnostics: "+d.RuntimeError
	case len(d.Failures) > 0:
		c.Status, c.Evidence = Fail, fmt.Sprintf("level %d: %s", level, strings.Join(d.Failures, "; "))
	case d.ExitCode == 205 || d.ExitCode == 226:
		if len(d.Notes) > 0 {
			c.Status, c.Evidence = Pass, fmt.Sprintf("level %d: %d results, no GPU to take out; to mend on the node: %s", level, d.Tests, strings.Join(d.Notes, "; "))
			return c
		}
		c.Status, c.Evidence = Fail, fmt.Sprintf("level %d: dcgmi exited %d (errors found) though its JSON names no failed result", level, d.ExitCode)
	case d.ExitCode == -1:
		c.Status, c.Evidence = Unknown, "the log ends without dcgmi's exit code: the container was cut short"
	case d.ExitCode != 0:
		c.Status, c.Evidence = Unknown, fmt.Sprintf("dcgmi exited %d: the diagnostics did not complete (242 no data, 245 timed out, 203 killed)", d.ExitCode)
	case d.Tests == 0:
		c.Status, c.Evidence = Unknown, "dcgmi reported no test result"
	default:
		c.Status, c.Evidence = Pass, fmt.Sprintf("level %d: %d results, none failed (DCGM %s)", level, d.Tests, orText(d.Version, "version not said"))
		if len(d.Notes) > 0 {
			c.Evidence += "; to mend on the node: " + strings.Join(d.Notes, "; ")
		}
	}
	return c
}
