// Package helmrender renders the Helm charts a stack installs, offline and without credentials,
// as pulumi-kubernetes's helm.sh/v4:Chart will render them at `pulumi up`: the same chart
// version, values, release name, namespace and Kubernetes version, through the same Helm
// (v3.18.6, the provider's). gpucluster-charts runs it for `gpucluster plan` (package charts).
package helmrender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/gpucluster/gpucluster/internal/charts"
)

// Renderer fetches and renders charts. The zero value is not usable: see New.
type Renderer struct {
	pull    puller
	timeout time.Duration
}

// New is a renderer that keeps the charts it fetches in cacheDir ("" for the user's cache:
// $XDG_CACHE_HOME/gpucluster/charts, or GPUCLUSTER_CHART_CACHE when set). A registry is asked
// through HTTPS_PROXY when set, and trusted by the system's roots or SSL_CERT_FILE.
func New(cacheDir string) *Renderer {
	if cacheDir == "" {
		cacheDir = os.Getenv("GPUCLUSTER_CHART_CACHE")
	}
	if cacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			cacheDir = filepath.Join(d, "gpucluster", "charts")
		}
	}
	return &Renderer{pull: puller{client: httpClient(), cache: cacheDir}, timeout: 2 * time.Minute}
}

// httpClient reads the proxy and the extra roots from the environment when it asks, not once per
// process as net/http and crypto/x509 do: a process may set them after its first request.
func httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		return httpproxy.FromEnvironment().ProxyFunc()(r.URL)
	}
	if file := os.Getenv("SSL_CERT_FILE"); file != "" {
		if pem, err := os.ReadFile(file); err == nil {
			pool, err := x509.SystemCertPool()
			if err != nil {
				pool = x509.NewCertPool()
			}
			pool.AppendCertsFromPEM(pem)
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// Render fetches and renders one chart. A failure is the result's Reason, never a panic or a
// partial list: a chart is rendered whole or not at all.
func (r *Renderer) Render(req charts.Request) charts.Rendered {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	out := charts.Rendered{Request: req}
	archive, digest, err := r.pull.pull(ctx, req.Chart, req.Version)
	if err != nil {
		out.Reason = err.Error()
		return out
	}
	objs, err := render(archive, req)
	if err != nil {
		out.Reason = err.Error()
		return out
	}
	out.Digest = digest
	out.Objects = objs
	return out
}
