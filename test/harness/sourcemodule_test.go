package harness

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// testModule is a module zip made here, with a go directive no Go of today runs, and its hash.
func testModule(t *testing.T) (SourceModule, []byte) { return testModuleOfChart(t, "1.2.3") }

// testModuleOfChart is testModule with a chart of the version given.
func testModuleOfChart(t *testing.T, chart string) (SourceModule, []byte) {
	t.Helper()
	src := t.TempDir()
	files := map[string]string{
		"go.mod":                 "module example.com/charts\n\ngo 1.99.1\n",
		"charts/x/Chart.yaml":    "name: x\nversion: " + chart + "\n",
		"pkg/apis/crds/a.yaml":   "kind: CustomResourceDefinition\n",
		"pkg/providers/table.go": "package providers\n",
	}
	for name, body := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := SourceModule{Path: "example.com/charts", Version: "v1.2.3"}
	var zip bytes.Buffer
	if err := modzip.CreateFromDir(&zip, module.Version{Path: m.Path, Version: m.Version}, src); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "m.zip")
	if err := os.WriteFile(file, zip.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := dirhash.HashZip(file, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	m.Sum = sum
	return m, zip.Bytes()
}

// proxy serves one module zip at its protocol path and counts the requests.
func proxy(t *testing.T, m SourceModule, zip []byte, status int) (*httptest.Server, *int) {
	t.Helper()
	n := new(int)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*n++
		if status != http.StatusOK {
			http.Error(w, "no", status)
			return
		}
		if r.URL.Path != "/"+m.Path+"/@v/"+m.Version+".zip" {
			http.NotFound(w, r)
			return
		}
		w.Write(zip)
	}))
	t.Cleanup(s.Close)
	return s, n
}

// TestSourceModuleFetchedCheckedAndKept: the zip comes from the proxy, is held to its hash,
// extracted whole, and read from the cache next time without the network.
func TestSourceModuleFetchedCheckedAndKept(t *testing.T) {
	m, zip := testModule(t)
	s, requests := proxy(t, m, zip, http.StatusOK)
	root := t.TempDir()
	dir, err := m.dirIn(root, t.TempDir(), s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "charts", "x", "Chart.yaml")); err != nil || !strings.Contains(string(b), "1.2.3") {
		t.Fatalf("chart not extracted: %q %v", b, err)
	}
	s.Close()
	again, err := m.dirIn(root, t.TempDir(), "off")
	if err != nil || again != dir || *requests != 1 {
		t.Fatalf("second call: %q %v after %d requests; want %q from the cache", again, err, *requests, dir)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*"))
	if len(leftovers) != 1 {
		t.Errorf("the cache holds %v; want the module alone", leftovers)
	}
}

// TestSourceModuleRefusesAnotherHash: a zip that is not the one the checksum database names is
// refused, and nothing is left where the module would be.
func TestSourceModuleRefusesAnotherHash(t *testing.T) {
	m, zip := testModule(t)
	s, _ := proxy(t, m, zip, http.StatusOK)
	m.Sum = "h1:RGw64PB2ROUHZIUhBqjO78l3zJ9YctnWeullrr4cxYI="
	root := t.TempDir()
	_, err := m.dirIn(root, t.TempDir(), s.URL)
	if err == nil || !strings.Contains(err.Error(), "refusing it") {
		t.Fatalf("err = %v; want the hash refused", err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "example.com", "*")); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestSourceModuleUsesGoDownloadCache: a zip a build already put in Go's download cache is used
// (and checked) without asking any proxy.
func TestSourceModuleUsesGoDownloadCache(t *testing.T) {
	m, zip := testModule(t)
	modcache := t.TempDir()
	at := filepath.Join(modcache, "cache", "download", m.Path, "@v", m.Version+".zip")
	if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at, zip, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.dirIn(t.TempDir(), modcache, "off"); err != nil {
		t.Fatal(err)
	}
	_, other := testModuleOfChart(t, "1.2.4") // another content under the same name
	if err := os.WriteFile(at, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.dirIn(t.TempDir(), modcache, "off"); err == nil {
		t.Error("a changed zip in Go's download cache was used")
	}
}

// TestSourceModuleProxyList: GOPROXY's list is walked as the go command walks it: past a 404
// after a comma, past any error after a pipe, never past a server error after a comma, and
// "off" is an error that says what to do.
func TestSourceModuleProxyList(t *testing.T) {
	m, zip := testModule(t)
	good, _ := proxy(t, m, zip, http.StatusOK)
	missing, _ := proxy(t, m, zip, http.StatusNotFound)
	broken, _ := proxy(t, m, zip, http.StatusInternalServerError)
	for _, c := range []struct {
		goproxy string
		ok      bool
		says    string
	}{
		{missing.URL + "," + good.URL, true, ""},
		{broken.URL + "|" + good.URL, true, ""},
		{"direct," + good.URL, true, ""},
		{broken.URL + "," + good.URL, false, "500"},
		{missing.URL + ",off", false, "GOPROXY=off"},
		{"off", false, "GOPROXY=off"},
		{"direct", false, "names no proxy"},
	} {
		_, err := m.dirIn(t.TempDir(), t.TempDir(), c.goproxy)
		if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.says)) {
			t.Errorf("GOPROXY=%s: err = %v; want ok=%v saying %q", c.goproxy, err, c.ok, c.says)
		}
	}
}

// TestSourceModuleLeavesForeignFilesAlone: a directory at the module's place that no extraction
// marked is reported, not removed.
func TestSourceModuleLeavesForeignFilesAlone(t *testing.T) {
	m, zip := testModule(t)
	s, _ := proxy(t, m, zip, http.StatusOK)
	root := t.TempDir()
	foreign := filepath.Join(root, m.Path+"@"+m.Version, "notes.txt")
	if err := os.MkdirAll(filepath.Dir(foreign), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := m.dirIn(root, t.TempDir(), s.URL)
	if err == nil || !strings.Contains(err.Error(), "did not extract") {
		t.Errorf("err = %v; want the foreign directory reported", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("the foreign file is gone: %v", err)
	}
}
