package registry_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/gpucluster/gpucluster/test/realengine/registry"
)

// client is what a Go program with HTTPS_PROXY and SSL_CERT_FILE set uses: the proxy, and the
// stand-in's CA as its only root.
func client(t *testing.T, s *registry.Server) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(s.CA()) {
		t.Fatal("the stand-in's CA is not PEM")
	}
	proxy, err := url.Parse(s.ProxyURL())
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots}}}
}

func get(t *testing.T, c *http.Client, u string, accept string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// writeChart writes a chart source with a .helmignore, a CRD directory and a subchart.
func writeChart(t *testing.T) registry.Chart {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"demo/Chart.yaml":           "apiVersion: v2\nname: demo\n# the release stamps this\nversion: 0.0.0\nappVersion: \"0.0.0\"\ndependencies:\n- name: sub\n  version: 1.2.3\n",
		"demo/values.yaml":          "image:\n  # the tag the release sets\n  tag: latest\n  digest: sha256:old\nreplicas: 1\n",
		"demo/templates/cm.yaml":    "kind: ConfigMap\n",
		"demo/tests/test.yaml":      "a test Helm must not package\n",
		"demo/ci/values.yaml":       "ci values\n",
		"demo/.helmignore":          "# comment\ntests/\nci/\n*.bak\n",
		"demo/templates/old.bak":    "ignored\n",
		"crds/things.yaml":          "kind: CustomResourceDefinition\n",
		"sub/Chart.yaml":            "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"sub/templates/deploy.yaml": "kind: Deployment\n",
	}
	for name, data := range files {
		file := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return registry.Chart{Dir: filepath.Join(dir, "demo"), Version: "1.0.0",
		Values: map[string]any{"image.tag": "1.0.0", "image.digest": ""}, CRDs: filepath.Join(dir, "crds"),
		Dependencies: []registry.Chart{{Dir: filepath.Join(dir, "sub"), Version: "1.2.3"}}}
}

// untar reads a chart archive's files.
func untar(t *testing.T, archive []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		files[hdr.Name] = string(data)
	}
}

// TestAChartIsPulledAsHelmPullsIt: through the proxy, a client that trusts only the stand-in's
// CA gets the manifest by tag, then the config and the chart by digest, each matching its
// descriptor; the chart is the source packaged as the release packages it.
func TestAChartIsPulledAsHelmPullsIt(t *testing.T) {
	s, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddChart("oci://registry.example.com/charts/demo", writeChart(t)); err != nil {
		t.Fatal(err)
	}
	c := client(t, s)
	resp, body := get(t, c, "https://registry.example.com/v2/charts/demo/manifests/1.0.0", "application/vnd.oci.image.manifest.v1+json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.oci.image.manifest.v1+json" {
		t.Fatalf("manifest: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var m struct {
		Config struct{ MediaType, Digest string }
		Layers []struct {
			MediaType, Digest string
			Size              int
		}
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	if m.Config.MediaType != "application/vnd.cncf.helm.config.v1+json" || len(m.Layers) != 1 ||
		m.Layers[0].MediaType != "application/vnd.cncf.helm.chart.content.v1.tar+gzip" {
		t.Fatalf("manifest %s is not a Helm chart's", body)
	}
	blob := func(digest string) []byte {
		resp, data := get(t, c, "https://registry.example.com/v2/charts/demo/blobs/"+digest, "")
		sum := sha256.Sum256(data)
		if resp.StatusCode != 200 || "sha256:"+hex.EncodeToString(sum[:]) != digest {
			t.Fatalf("blob %s: %d, digest of the body %x", digest, resp.StatusCode, sum)
		}
		return data
	}
	var meta map[string]any
	if err := json.Unmarshal(blob(m.Config.Digest), &meta); err != nil || meta["name"] != "demo" || meta["version"] != "1.0.0" {
		t.Errorf("config %v (%v); want the chart's metadata, version stamped", meta, err)
	}
	files := untar(t, blob(m.Layers[0].Digest))
	for _, want := range []string{"demo/Chart.yaml", "demo/values.yaml", "demo/templates/cm.yaml", "demo/crds/things.yaml",
		"demo/charts/sub/Chart.yaml", "demo/charts/sub/templates/deploy.yaml"} {
		if _, ok := files[want]; !ok {
			t.Errorf("the package has no %s (it has %d files)", want, len(files))
		}
	}
	for _, unwanted := range []string{"demo/tests/test.yaml", "demo/ci/values.yaml", "demo/templates/old.bak"} {
		if _, ok := files[unwanted]; ok {
			t.Errorf("the package carries %s, which .helmignore names", unwanted)
		}
	}
	var values struct {
		Image    struct{ Tag, Digest string }
		Replicas int
	}
	if err := yaml.Unmarshal([]byte(files["demo/values.yaml"]), &values); err != nil || values.Image.Tag != "1.0.0" || values.Image.Digest != "" || values.Replicas != 1 {
		t.Errorf("values.yaml %q (%v): want the tag and digest stamped, the rest kept", files["demo/values.yaml"], err)
	}
	if !strings.Contains(files["demo/values.yaml"], "# the tag the release sets") {
		t.Errorf("stamping dropped values.yaml's comments: %q", files["demo/values.yaml"])
	}
	var sub struct{ Version string }
	if err := yaml.Unmarshal([]byte(files["demo/charts/sub/Chart.yaml"]), &sub); err != nil || sub.Version != "1.2.3" {
		t.Errorf("the subchart's version is %q (%v); want 1.2.3 stamped", sub.Version, err)
	}
	if len(s.Misses()) != 0 {
		t.Errorf("misses: %v", s.Misses())
	}
}

// TestWhatItDoesNotServeIsRefusedAndRecorded: another host is refused at CONNECT; an unknown tag
// or file is a 404; each is a miss.
func TestWhatItDoesNotServeIsRefusedAndRecorded(t *testing.T) {
	s, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddChart("oci://registry.example.com/charts/demo", writeChart(t)); err != nil {
		t.Fatal(err)
	}
	if err := s.AddFile("https://raw.example.com/org/repo/v1/crd.yaml", []byte("kind: CustomResourceDefinition\n")); err != nil {
		t.Fatal(err)
	}
	c := client(t, s)
	if _, err := c.Get("https://elsewhere.example.com/"); err == nil {
		t.Error("a host the stand-in does not serve was reached")
	}
	if resp, _ := get(t, c, "https://registry.example.com/v2/charts/demo/manifests/9.9.9", ""); resp.StatusCode != 404 {
		t.Errorf("an unknown tag: %d, want 404", resp.StatusCode)
	}
	if resp, body := get(t, c, "https://raw.example.com/org/repo/v1/crd.yaml", ""); resp.StatusCode != 200 || string(body) != "kind: CustomResourceDefinition\n" {
		t.Errorf("the file: %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, c, "https://raw.example.com/org/repo/v2/crd.yaml", ""); resp.StatusCode != 404 {
		t.Errorf("an unknown file: %d, want 404", resp.StatusCode)
	}
	if got := len(s.Misses()); got != 3 {
		t.Errorf("misses %q; want the other host, the tag and the file", s.Misses())
	}
}

// TestKueuesReleaseChartPackages: the Kueue chart of the pinned release packages under its own
// name and version, without its tests/ (its .helmignore).
func TestKueuesReleaseChartPackages(t *testing.T) {
	dir, err := kubeapi.ModuleDir(kubeapi.KueueModule)
	if err != nil {
		t.Fatal(err)
	}
	archive, meta, err := registry.Chart{Dir: filepath.Join(dir, "charts", "kueue"), Version: kueue.ChartVersion}.Package()
	if err != nil {
		t.Fatal(err)
	}
	if meta["name"] != "kueue" || meta["version"] != kueue.ChartVersion {
		t.Errorf("metadata %v", meta)
	}
	files := untar(t, archive)
	if _, ok := files["kueue/templates/webhook/manifests.yaml"]; !ok {
		t.Errorf("no webhook templates among %d files", len(files))
	}
	for name := range files {
		if strings.HasPrefix(name, "kueue/tests/") {
			t.Errorf("%s packaged; the chart's .helmignore names tests/*", name)
		}
	}
}

// TestAConnectToThisMachineIsTunnelled: a client that sends everything to the proxy (as
// pulumi-eks's readiness probe does) still reaches a server on this machine, and it is recorded.
func TestAConnectToThisMachineIsTunnelled(t *testing.T) {
	s, err := registry.New()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	defer ts.Close()
	proxy, _ := url.Parse(s.ProxyURL())
	c := ts.Client()
	c.Transport.(*http.Transport).Proxy = http.ProxyURL(proxy)
	resp, err := c.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("through the proxy: %q", body)
	}
	if reqs := s.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0], "(tunnelled)") {
		t.Errorf("requests %q; want the tunnel", reqs)
	}
}
