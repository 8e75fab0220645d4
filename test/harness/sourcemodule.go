package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// SourceModule is a module the tests read files from (CRDs, a Helm chart, generated tables) and
// never build. It is fetched by the module proxy protocol (`go help goproxy`: GET
// $GOPROXY/<module>/@v/<version>.zip) and held to Sum, the module's line in the checksum database
// (sum.golang.org), so its go directive does not matter. That is the point: `go mod download`
// refuses a module whose go.mod asks for a newer Go than the one running (karpenter-provider-aws
// v1.15.2 asks for go 1.26.11; the machine has go1.26.8 with GOTOOLCHAIN=local), and the only
// way through it would be another toolchain on every fresh machine, for files no compiler reads.
type SourceModule struct {
	Path, Version string
	// Sum is the module's h1: hash as the checksum database gives it
	// (https://sum.golang.org/lookup/<module>@<version>).
	Sum string
}

// sumFile marks a complete extraction with the hash it was checked against.
const sumFile = ".gpucluster-sum"

// Dir is where the module's files lie, extracted into the harness cache
// (<cache>/modules/<module>@<version>). The zip comes from Go's own download cache when a build
// already put it there, else from the first proxy of GOPROXY; either way its hash must be Sum.
func (m SourceModule) Dir() (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	env, err := goEnv()
	if err != nil {
		return "", err
	}
	return m.dirIn(filepath.Join(cache, "modules"), env.GOMODCACHE, env.GOPROXY)
}

// dirIn is Dir with the cache root, Go's module cache and GOPROXY given.
func (m SourceModule) dirIn(root, modcache, goproxy string) (string, error) {
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	escVersion, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	dest := filepath.Join(root, escPath+"@"+escVersion)
	if sum, err := os.ReadFile(filepath.Join(dest, sumFile)); err == nil && string(sum) == m.Sum {
		return dest, nil
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", err
	}
	zipFile := filepath.Join(modcache, "cache", "download", escPath, "@v", escVersion+".zip")
	if _, err := os.Stat(zipFile); err != nil {
		tmp, err := os.CreateTemp(filepath.Dir(dest), "download-*.zip")
		if err != nil {
			return "", err
		}
		tmp.Close()
		defer os.Remove(tmp.Name())
		if err := download(goproxy, escPath+"/@v/"+escVersion+".zip", tmp.Name()); err != nil {
			return "", fmt.Errorf("%s@%s: %w", m.Path, m.Version, err)
		}
		zipFile = tmp.Name()
	}
	got, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		return "", fmt.Errorf("%s@%s: %w", m.Path, m.Version, err)
	}
	if got != m.Sum {
		return "", fmt.Errorf("%s@%s: the zip (%s) hashes to %s, the checksum database says %s: refusing it", m.Path, m.Version, zipFile, got, m.Sum)
	}
	// Extract beside the destination and rename: a test that starts while another extracts
	// sees the whole module or none of it.
	work, err := os.MkdirTemp(filepath.Dir(dest), "extract-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	into := filepath.Join(work, "m")
	if err := modzip.Unzip(into, module.Version{Path: m.Path, Version: m.Version}, zipFile); err != nil {
		return "", fmt.Errorf("%s@%s: %w", m.Path, m.Version, err)
	}
	if err := os.WriteFile(filepath.Join(into, sumFile), []byte(m.Sum), 0o644); err != nil {
		return "", err
	}
	// Never remove what is at dest: another test binary may have just put it there and be
	// reading it. A complete extraction is only ever renamed into place, marked.
	if err := os.Rename(into, dest); err != nil {
		if sum, rerr := os.ReadFile(filepath.Join(dest, sumFile)); rerr == nil && string(sum) == m.Sum {
			return dest, nil // another process finished first
		}
		return "", fmt.Errorf("%s@%s: %s holds something this harness did not extract; remove it and run again: %w", m.Path, m.Version, dest, err)
	}
	return dest, nil
}

// download fetches a file from the first proxy of GOPROXY that has it, as the go command does:
// after a comma only on a 404 or 410, after a pipe on any error (`go help goproxy`).
func download(goproxy, rel, to string) error {
	var errs []error
	rest := goproxy
	for rest != "" {
		var proxy string
		fallBackOnAnyError := false
		if i := strings.IndexAny(rest, ",|"); i >= 0 {
			proxy, fallBackOnAnyError, rest = rest[:i], rest[i] == '|', rest[i+1:]
		} else {
			proxy, rest = rest, ""
		}
		switch proxy = strings.TrimSpace(proxy); proxy {
		case "", "direct":
			continue // a version control checkout: not how a source module is fetched here
		case "off":
			return errors.Join(append(errs, errors.New("GOPROXY=off and the module is in no cache: run the harness build once with a proxy"))...)
		}
		status, err := get(strings.TrimSuffix(proxy, "/")+"/"+rel, to)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if !fallBackOnAnyError && status != http.StatusNotFound && status != http.StatusGone {
			break
		}
	}
	if len(errs) == 0 {
		errs = append(errs, fmt.Errorf("GOPROXY=%q names no proxy", goproxy))
	}
	return errors.Join(errs...)
}

// get writes the body of url to a file; it returns the HTTP status when there was one.
func get(url, to string) (int, error) {
	client := http.Client{Timeout: 5 * time.Minute}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return resp.StatusCode, fmt.Errorf("GET %s: %s %s", url, resp.Status, strings.TrimSpace(string(msg)))
	}
	f, err := os.Create(to)
	if err != nil {
		return resp.StatusCode, err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return resp.StatusCode, fmt.Errorf("GET %s: %w", url, err)
	}
	return resp.StatusCode, f.Close()
}

// goEnv is what `go env` says of the module cache and proxy.
func goEnv() (struct{ GOMODCACHE, GOPROXY string }, error) {
	var env struct{ GOMODCACHE, GOPROXY string }
	out, err := exec.Command("go", "env", "-json", "GOMODCACHE", "GOPROXY").Output()
	if err != nil {
		return env, fmt.Errorf("go env: %w", err)
	}
	return env, json.Unmarshal(out, &env)
}
