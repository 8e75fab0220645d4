package charts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// script writes an executable shell script standing in for gpucluster-charts of another
// release, or one that fails: the answers the CLI must not half-read.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), ProgramName)
	if err := os.WriteFile(p, []byte("#!/bin/sh\ncat >/dev/null\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

var twoCharts = []Request{{Resource: "a", Chart: "oci://r/a", Version: "1"}, {Resource: "b", Chart: "oci://r/b", Version: "2"}}

// TestAnAnswerNotWholeIsEveryChartsReason: a renderer that fails, speaks another protocol, answers
// for fewer charts or prints something else leaves every chart not rendered, saying why.
func TestAnAnswerNotWholeIsEveryChartsReason(t *testing.T) {
	for _, c := range []struct{ body, reason string }{
		{`echo "no such chart" >&2; exit 1`, "no such chart"},
		{`echo '{"protocol":2,"charts":[{},{}]}'`, "speaks protocol 2, this gpucluster 1"},
		{`echo '{"protocol":1,"charts":[{}]}'`, "answered for 1 of 2 charts"},
		{`echo 'rendered!'`, "answered something other than its output"},
	} {
		got := Program{Path: script(t, c.body)}.Render(twoCharts)
		if len(got) != 2 {
			t.Fatalf("%q: %d results for 2 charts", c.body, len(got))
		}
		for i, r := range got {
			if r.Request.Resource != twoCharts[i].Resource || len(r.Objects) != 0 || !strings.Contains(r.Reason, c.reason) {
				t.Errorf("%q: result %d %+v: want %s not rendered, saying %q", c.body, i, r, twoCharts[i].Resource, c.reason)
			}
		}
	}
}

// TestLocate: off renders nothing; a path given is used; a checkout of this module is one the
// renderer can be built from, any other directory is not.
func TestLocate(t *testing.T) {
	t.Setenv(RendererEnv, RendererOff)
	if _, err := Locate("../..", nil); err == nil || !strings.Contains(err.Error(), RendererEnv+"=off") {
		t.Errorf("off: %v", err)
	}
	got := OnDemand{ProjectDir: "../.."}.Render(twoCharts)
	if len(got) != 2 || !strings.Contains(got[1].Reason, "charts are not rendered") {
		t.Errorf("off: %+v", got)
	}
	t.Setenv(RendererEnv, "/opt/x/"+ProgramName)
	if p, err := Locate("../..", nil); err != nil || p != "/opt/x/"+ProgramName {
		t.Errorf("named: %q %v", p, err)
	}
	if !isThisModule("../..") || isThisModule(t.TempDir()) {
		t.Errorf("isThisModule: the checkout %v, a temporary directory %v", isThisModule("../.."), isThisModule(t.TempDir()))
	}
}

// TestNoChartsRunNothing: a stack without charts never starts the renderer (dev's plan).
func TestNoChartsRunNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "ran")
	if got := (Program{Path: script(t, "touch "+marker)}).Render(nil); got != nil {
		t.Errorf("%+v", got)
	}
	t.Setenv(RendererEnv, "/nonexistent/"+ProgramName)
	if got := (OnDemand{}).Render(nil); got != nil {
		t.Errorf("%+v", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the renderer ran for no chart")
	}
}
