package doctor

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// The corpus: fixtures written here, each modelled on a public NCCL log (its header names the
// issue or file) and reproducing that log's shapes and facts. Each states in "# expect:" lines
// what the doctor must say of it; TestCorpus holds the doctor to every one. At least 20 logs.
func TestCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*.log")
	if len(files) < 20 {
		t.Fatalf("%d corpus logs; the corpus keeps at least 20", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".log"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(data), "# Models: https://") {
				t.Fatal("the fixture does not name the public log it models")
			}
			want := map[string]string{}
			for _, line := range strings.Split(string(data), "\n") {
				if e, ok := strings.CutPrefix(line, "# expect: "); ok {
					k, v, _ := strings.Cut(e, "=")
					want[k] = v
				}
			}
			if len(want) == 0 {
				t.Fatal("no # expect: line")
			}
			if want["exit"] == "" {
				t.Fatal("no # expect: exit= line: every fixture says how the doctor must exit (1 for a log that holds a failure)")
			}
			l, err := Parse(strings.NewReader(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			var pool *topology.PoolSpec
			if name := want["profile"]; name != "" {
				pool = profile(t, name)
			}
			r := Diagnose(l, nil, pool, "profile "+want["profile"])
			got := corpusFacts(l, r)
			for k, v := range want {
				if k == "profile" {
					continue
				}
				if got[k] != v && !((k == "change" || k == "evidence") && strings.Contains(got[k], v)) {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

// corpusFacts are what a corpus fixture may state about the doctor's reading of it.
func corpusFacts(l *Log, r *Report) map[string]string {
	f := map[string]string{
		"version": r.NCCLVersion, "plugin": r.NetPlugin, "pluginVersion": r.PluginVersion, "network": r.Network,
		"platform": r.Platform, "provider": r.Provider, "nics": fmt.Sprint(r.NICs), "instance": r.InstanceType,
		"warnings": fmt.Sprint(len(r.NCCLWarnings)), "bootstrap": fmt.Sprintf("%.1f", l.BootstrapSec),
	}
	f["pluginset"] = strings.Join(topology.SortedKeys(r.PluginSetEnv), ",")
	f["networkFrom"], f["collnetPlugin"] = r.NetworkFrom, r.CollNetPlugin
	// The CLI's exit code for the outcome (cmd/gpucluster's doctorExit; its own test runs
	// every fixture through the CLI).
	f["exit"] = map[string]string{OutcomePass: "0", OutcomeFail: "1", OutcomeUnknown: "3"}[r.Outcome()]
	for k, v := range l.Env {
		f["env."+k] = v
	}
	var codes []string
	for _, x := range r.Findings {
		codes = append(codes, x.Code)
	}
	sort.Strings(codes)
	f["findings"] = strings.Join(codes, ",")
	if len(r.Findings) > 0 {
		f["evidence"] = r.Findings[0].Evidence // the first finding's: its record is the first of its chain
	}
	if len(codes) == 0 {
		f["findings"] = "none"
	}
	comms := 0
	for _, c := range r.Communicators {
		if !c.Excerpt {
			comms++
		}
	}
	f["comms"] = fmt.Sprint(comms)
	if len(r.Communicators) > 0 {
		c := r.Communicators[0]
		f["excerpt"] = fmt.Sprint(c.Excerpt)
		f["ranks"], f["nodes"], f["perNode"] = known(c.Ranks), known(c.Nodes), known(c.LocalRanks)
		f["intra"], f["inter"] = c.IntraNode, c.InterNode
		f["parent"] = c.Parent
		f["channels"], f["nvlsChannels"], f["collnet"] = known(c.Channels), known(c.NVLSChannels), known(c.CollNet)
		f["nvlsInUse"] = fmt.Sprint(c.NVLSInUse)
		f["connections"] = ""
		for _, conn := range c.Connections {
			f["connections"] += fmt.Sprintf("%s %s %d;", conn.Where, conn.Transport, conn.Count)
		}
		for _, sub := range r.Communicators {
			if sub.Parent != "" {
				f["split"] = "yes" // one communicator was split from another (ncclCommSplit)
			}
		}
	}
	if v := r.Verdict; v != nil {
		f["verdict"] = v.Status
		f["change"] = strings.Join(v.Changes, " | ") + v.Reason
	}
	return f
}

func known(n int) string {
	if n == 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// TestAdviceSaysWhereItApplies: a cause or fix that speaks of pods says it is about Kubernetes (or
// names containers too): the same logs come from bare-instance mpirun jobs (issue 19, class 7).
func TestAdviceSaysWhereItApplies(t *testing.T) {
	for _, tl := range everyTestLog(t) {
		f := tl.path
		l, err := Parse(strings.NewReader(tl.text))
		if err != nil {
			continue
		}
		for _, x := range Diagnose(l, nil, nil, "").Findings {
			for _, text := range []string{x.Cause, x.Fix} {
				if strings.Contains(text, "pod") && !strings.Contains(text, "Kubernetes") && !strings.Contains(text, "container") && !strings.Contains(text, "gpucluster") {
					t.Errorf("%s: %s speaks of pods only: %q", filepath.Base(f), x.Code, text)
				}
			}
		}
	}
}

// testLog is one log of testdata.
type testLog struct{ path, text string }

// everyTestLog is every log in testdata: the corpus and the hand-written ones.
func everyTestLog(tb testing.TB) []testLog {
	tb.Helper()
	files, _ := filepath.Glob("testdata/corpus/*.log")
	more, _ := filepath.Glob("testdata/*.log")
	var out []testLog
	for _, f := range append(files, more...) {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, testLog{f, string(data)})
	}
	return out
}
