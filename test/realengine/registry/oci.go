package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// The media types of a Helm chart pushed to an OCI registry (helm.sh/helm/v3 pkg/registry
// constants.go; the Helm docs' "Use OCI-based registries").
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.cncf.helm.config.v1+json"
	mediaTypeChart    = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

type manifest struct {
	body   []byte
	digest string
}

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int    `json:"size"`
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// AddChart serves a chart as `helm push` publishes it: at ref (oci://host/path/name), tagged with
// its version, a manifest whose config is the chart's metadata and whose one layer is the
// packaged chart.
func (s *Server) AddChart(ref string, c Chart) error {
	rest, ok := strings.CutPrefix(ref, "oci://")
	host, repoPath, _ := strings.Cut(rest, "/")
	if !ok || host == "" || repoPath == "" {
		return fmt.Errorf("registry stand-in: %q is not an oci://host/repository reference", ref)
	}
	archive, meta, err := c.Package()
	if err != nil {
		return err
	}
	if name := repoPath[strings.LastIndex(repoPath, "/")+1:]; meta["name"] != name {
		return fmt.Errorf("registry stand-in: %s holds chart %v, not %s", c.Dir, meta["name"], name)
	}
	config, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	body, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     mediaTypeManifest,
		"config":        descriptor{mediaTypeConfig, digestOf(config), len(config)},
		"layers":        []descriptor{{mediaTypeChart, digestOf(archive), len(archive)}},
	})
	if err != nil {
		return err
	}
	repo := host + "/" + repoPath
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hosts[host] = true
	s.manifests[repo+":"+c.Version] = manifest{body, digestOf(body)}
	s.blobs[repo+"@"+digestOf(config)] = config
	s.blobs[repo+"@"+digestOf(archive)] = archive
	return nil
}

// serveRegistry answers the OCI distribution API (the distribution spec's pull endpoints):
// GET/HEAD /v2/<name>/manifests/<reference>, /v2/<name>/blobs/<digest>, /v2/<name>/tags/list.
// No request needs credentials: the public registries the stand-in replaces serve these charts
// to anonymous clients (after a token dance the stand-in skips: Helm asks for a token only when
// a registry answers 401).
func (s *Server) serveRegistry(w http.ResponseWriter, r *http.Request, host string) {
	path := strings.TrimPrefix(r.URL.Path, "/v2/")
	if path == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	write := func(mediaType string, body []byte, digest string) {
		s.requests = append(s.requests, r.Method+" https://"+host+r.URL.Path)
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if digest != "" {
			w.Header().Set("Docker-Content-Digest", digest)
		}
		if r.Method != http.MethodHead {
			w.Write(body)
		}
	}
	if name, ref, ok := cutLast(path, "/manifests/"); ok {
		repo := host + "/" + name
		m, found := s.manifests[repo+":"+ref]
		if !found {
			for key, candidate := range s.manifests {
				if strings.HasPrefix(key, repo+":") && candidate.digest == ref {
					m, found = candidate, true
				}
			}
		}
		if found {
			write(mediaTypeManifest, m.body, m.digest)
			return
		}
	} else if name, digest, ok := cutLast(path, "/blobs/"); ok {
		if blob, found := s.blobs[host+"/"+name+"@"+digest]; found {
			write("application/octet-stream", blob, digest)
			return
		}
	} else if name, ok := strings.CutSuffix(path, "/tags/list"); ok {
		var tags []string
		for key := range s.manifests {
			if tag, ok := strings.CutPrefix(key, host+"/"+name+":"); ok {
				tags = append(tags, tag)
			}
		}
		if len(tags) > 0 {
			sort.Strings(tags)
			body, _ := json.Marshal(map[string]any{"name": name, "tags": tags})
			write("application/json", body, "")
			return
		}
	}
	s.misses = append(s.misses, fmt.Sprintf("%s https://%s%s (not in the stand-in registry)", r.Method, host, r.URL.Path))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known to registry"}]}`)
}

// cutLast splits s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
