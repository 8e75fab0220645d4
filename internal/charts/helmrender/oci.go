package helmrender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// The media types of a Helm chart in an OCI registry (helm.sh/helm/v3 pkg/registry/constants.go
// at v3.18.6): the manifest's one layer is the packaged chart.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeChart    = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	// maxChart bounds a chart archive: the largest chart a stack installs is well under a
	// megabyte; a registry answering with more is not serving a chart.
	maxChart = 64 << 20
)

// puller fetches charts from OCI registries over HTTPS, anonymously (every chart a stack installs
// is public), through HTTPS_PROXY when set, and keeps them in a cache by digest.
type puller struct {
	client *http.Client
	cache  string // directory; "" keeps nothing
}

// pull is the packaged chart at ref (oci://host/repository) and version, from the cache when it
// holds the digest the registry names, and the digest.
func (p *puller) pull(ctx context.Context, ref, version string) ([]byte, string, error) {
	rest, ok := strings.CutPrefix(ref, "oci://")
	host, repo, _ := strings.Cut(rest, "/")
	if !ok || host == "" || repo == "" {
		return nil, "", fmt.Errorf("%s is not an oci://host/repository reference", ref)
	}
	// Helm tags a chart with its version, '+' written as '_' (pkg/registry/util.go).
	tag := strings.ReplaceAll(version, "+", "_")
	body, err := p.get(ctx, "https://"+host+"/v2/"+repo+"/manifests/"+tag, mediaTypeManifest, host, repo)
	if err != nil {
		return nil, "", fmt.Errorf("manifest of %s:%s: %w", ref, version, err)
	}
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, "", fmt.Errorf("manifest of %s:%s: %w", ref, version, err)
	}
	digest := ""
	for _, l := range m.Layers {
		if l.MediaType == mediaTypeChart {
			digest = l.Digest
		}
	}
	hexSum, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexSum) != 64 {
		return nil, "", fmt.Errorf("manifest of %s:%s names no chart layer with a sha256 digest", ref, version)
	}
	cached := ""
	if p.cache != "" {
		cached = filepath.Join(p.cache, host, filepath.FromSlash(repo), tag+"-"+hexSum[:16]+".tgz")
		if data, err := os.ReadFile(cached); err == nil && sha256Hex(data) == hexSum {
			return data, digest, nil
		}
	}
	data, err := p.get(ctx, "https://"+host+"/v2/"+repo+"/blobs/"+digest, "", host, repo)
	if err != nil {
		return nil, "", fmt.Errorf("chart %s:%s: %w", ref, version, err)
	}
	if sha256Hex(data) != hexSum {
		return nil, "", fmt.Errorf("chart %s:%s: the registry's bytes do not have the digest its manifest names (%s)", ref, version, digest)
	}
	if cached != "" {
		// The cache is only a cache: a plan that cannot write it still renders.
		// A file of its own per writer, renamed into place: plans running side by side (the
		// tier's stacks) never write into one file.
		if err := os.MkdirAll(filepath.Dir(cached), 0o755); err == nil {
			if tmp, err := os.CreateTemp(filepath.Dir(cached), filepath.Base(cached)+".partial-*"); err == nil {
				_, werr := tmp.Write(data)
				if cerr := tmp.Close(); werr == nil && cerr == nil && os.Chmod(tmp.Name(), 0o644) == nil && os.Rename(tmp.Name(), cached) == nil {
					return data, digest, nil
				}
				os.Remove(tmp.Name())
			}
		}
	}
	return data, digest, nil
}

// get reads u, answering a registry's anonymous token challenge once (the distribution spec's
// token authentication: public.ecr.aws, ghcr.io and registry.k8s.io's backends ask for one).
func (p *puller) get(ctx context.Context, u, accept, host, repo string) ([]byte, error) {
	token := ""
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxChart+1))
		resp.Body.Close()
		switch {
		case err != nil:
			return nil, err
		case resp.StatusCode == http.StatusUnauthorized && attempt == 0:
			if token, err = p.anonymousToken(ctx, resp.Header.Get("WWW-Authenticate"), repo); err != nil {
				return nil, fmt.Errorf("%s asks for credentials: %w", host, err)
			}
			continue
		case resp.StatusCode != http.StatusOK:
			return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
		case len(body) > maxChart:
			return nil, fmt.Errorf("GET %s: more than %d bytes", u, maxChart)
		}
		return body, nil
	}
}

// anonymousToken asks a registry's token service for a pull token without credentials.
func (p *puller) anonymousToken(ctx context.Context, challenge, repo string) (string, error) {
	scheme, params, _ := strings.Cut(challenge, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("challenge %q is not a bearer token one", challenge)
	}
	fields := challengeFields(params)
	realm := fields["realm"]
	if realm == "" {
		return "", fmt.Errorf("challenge %q names no realm", challenge)
	}
	q := url.Values{}
	if s := fields["service"]; s != "" {
		q.Set("service", s)
	}
	scope := fields["scope"]
	if scope == "" {
		scope = "repository:" + repo + ":pull"
	}
	q.Set("scope", scope)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm+"?"+q.Encode(), nil)
	if err != nil {
		return "", err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("token service %s: %s", realm, resp.Status)
	}
	var t struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&t); err != nil {
		return "", fmt.Errorf("token service %s: %w", realm, err)
	}
	if t.Token == "" {
		t.Token = t.AccessToken
	}
	if t.Token == "" {
		return "", errors.New("token service " + realm + " gave no token")
	}
	return t.Token, nil
}

// challengeFields reads `realm="…",service="…",scope="…"`.
func challengeFields(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		key, rest, ok := strings.Cut(strings.TrimLeft(s, " ,"), "=")
		if !ok {
			break
		}
		var val string
		if strings.HasPrefix(rest, `"`) {
			end := strings.Index(rest[1:], `"`)
			if end < 0 {
				break
			}
			val, s = rest[1:1+end], rest[2+end:]
		} else {
			val, s, _ = strings.Cut(rest, ",")
		}
		out[strings.ToLower(strings.TrimSpace(key))] = val
	}
	return out
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
