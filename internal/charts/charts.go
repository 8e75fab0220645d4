// Package charts renders the Helm charts a stack installs, offline and without credentials, as
// pulumi-kubernetes's helm.sh/v4:Chart will render them at `pulumi up`: the same chart version,
// values, release name, namespace and Kubernetes version, through the same Helm (v3.18.6, the
// provider's). The review bundle shows every object the charts create.
package charts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Request is one chart of a stack, as its Chart resource names it.
type Request struct {
	Resource  string // the Chart resource's name
	Chart     string // oci://host/repository
	Version   string
	Release   string // the release name: the resource's name when the component gives none
	Namespace string
	Values    map[string]any
	// KubernetesVersion is the cluster's ("1.33"): the chart sees it as .Capabilities.KubeVersion.
	KubernetesVersion string
}

// Object is one object a chart creates.
type Object struct {
	Source   string         // the chart file it came from ("karpenter/templates/deployment.yaml")
	Manifest map[string]any // as it will be applied
}

func (o Object) str(keys ...string) string {
	var cur any = o.Manifest
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

func (o Object) Kind() string       { return o.str("kind") }
func (o Object) APIVersion() string { return o.str("apiVersion") }
func (o Object) Name() string       { return o.str("metadata", "name") }
func (o Object) Namespace() string  { return o.str("metadata", "namespace") }

// Group is the object's API group ("" for the core group).
func (o Object) Group() string {
	g, _, found := strings.Cut(o.APIVersion(), "/")
	if !found {
		return ""
	}
	return g
}

// Rendered is one chart's outcome: its objects, or why it was not rendered.
type Rendered struct {
	Request Request
	Digest  string // the chart archive's, as its registry names it
	Objects []Object
	Err     error // the chart could not be fetched or rendered: Objects is empty
}

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

// Render fetches and renders one chart. A failure is the result's Err, never a panic or a
// partial list: a chart is rendered whole or not at all.
func (r *Renderer) Render(req Request) Rendered {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	out := Rendered{Request: req}
	archive, digest, err := r.pull.pull(ctx, req.Chart, req.Version)
	if err != nil {
		out.Err = err
		return out
	}
	out.Digest = digest
	objs, err := render(archive, req)
	if err != nil {
		out.Err = err
		return out
	}
	out.Objects = objs
	return out
}
