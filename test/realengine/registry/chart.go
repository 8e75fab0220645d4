package registry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Chart is a chart's source as a release tags it, and what the release's packaging adds before
// it publishes the chart: a project's release script often stamps the version into Chart.yaml
// and values.yaml only when it packages the chart (Karpenter's hack/release/common.sh; `helm
// package --version`), and fetches the subcharts into charts/ (`helm dependency build`).
type Chart struct {
	// Dir is the chart's source directory at the release (in the module cache).
	Dir string
	// Version is stamped into Chart.yaml's version; AppVersion into appVersion where not empty.
	Version, AppVersion string
	// Values are stamped into values.yaml, each at a dotted path.
	Values map[string]any
	// CRDs is a directory whose *.yaml the package carries in crds/ (Karpenter's chart links
	// crds/ to pkg/apis/crds, which a Go module zip leaves out).
	CRDs string
	// Dependencies are the subcharts the package carries in charts/.
	Dependencies []Chart
}

// Package is the chart as `helm package` writes it: a gzipped tar of <name>/…, without what its
// .helmignore names. It returns the archive and the chart's metadata (Chart.yaml, stamped),
// which a registry serves as the artifact's config.
func (c Chart) Package() ([]byte, map[string]any, error) {
	files, meta, err := c.files()
	if err != nil {
		return nil, nil, err
	}
	name, _ := meta["name"].(string)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	// A fixed time: the same sources give the same archive, and so the same digest.
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range paths {
		hdr := &tar.Header{Name: name + "/" + p, Mode: 0o644, Size: int64(len(files[p])), ModTime: mtime, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(files[p]); err != nil {
			return nil, nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), meta, nil
}

// files are the packaged chart's files by path inside it, and its stamped metadata.
func (c Chart) files() (map[string][]byte, map[string]any, error) {
	ignore, err := readIgnore(filepath.Join(c.Dir, ".helmignore"))
	if err != nil {
		return nil, nil, err
	}
	files := map[string][]byte{}
	err = filepath.WalkDir(c.Dir, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.Dir, file)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if ignored(ignore, rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(file)
		files[rel] = data
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if files["Chart.yaml"] == nil {
		return nil, nil, fmt.Errorf("registry stand-in: %s has no Chart.yaml", c.Dir)
	}
	stamps := map[string]any{}
	if c.Version != "" {
		stamps["version"] = c.Version
	}
	if c.AppVersion != "" {
		stamps["appVersion"] = c.AppVersion
	}
	if files["Chart.yaml"], err = stamp(files["Chart.yaml"], stamps); err != nil {
		return nil, nil, fmt.Errorf("%s/Chart.yaml: %w", c.Dir, err)
	}
	if len(c.Values) > 0 {
		if files["values.yaml"], err = stamp(files["values.yaml"], c.Values); err != nil {
			return nil, nil, fmt.Errorf("%s/values.yaml: %w", c.Dir, err)
		}
	}
	if c.CRDs != "" {
		crds, err := filepath.Glob(filepath.Join(c.CRDs, "*.yaml"))
		if err != nil || len(crds) == 0 {
			return nil, nil, fmt.Errorf("registry stand-in: no CRDs in %s", c.CRDs)
		}
		for _, f := range crds {
			if files["crds/"+filepath.Base(f)], err = os.ReadFile(f); err != nil {
				return nil, nil, err
			}
		}
	}
	for _, dep := range c.Dependencies {
		depFiles, depMeta, err := dep.files()
		if err != nil {
			return nil, nil, err
		}
		for p, data := range depFiles {
			files[fmt.Sprintf("charts/%v/%s", depMeta["name"], p)] = data
		}
	}
	var meta map[string]any
	if err := yaml.Unmarshal(files["Chart.yaml"], &meta); err != nil {
		return nil, nil, fmt.Errorf("%s/Chart.yaml: %w", c.Dir, err)
	}
	return files, meta, nil
}

// stamp sets each dotted path of a YAML document to its value, keeping the rest (comments too).
func stamp(doc []byte, values map[string]any) ([]byte, error) {
	if len(values) == 0 {
		return doc, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a YAML mapping")
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var value yaml.Node
		if err := value.Encode(values[k]); err != nil {
			return nil, err
		}
		if err := setPath(root.Content[0], strings.Split(k, "."), &value); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return yaml.Marshal(&root)
}

func setPath(m *yaml.Node, keys []string, value *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != keys[0] {
			continue
		}
		if len(keys) == 1 {
			m.Content[i+1] = value
			return nil
		}
		if m.Content[i+1].Kind != yaml.MappingNode {
			return fmt.Errorf("%s is not a mapping", keys[0])
		}
		return setPath(m.Content[i+1], keys[1:], value)
	}
	key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: keys[0]}
	if len(keys) == 1 {
		m.Content = append(m.Content, key, value)
		return nil
	}
	child := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	m.Content = append(m.Content, key, child)
	return setPath(child, keys[1:], value)
}

// readIgnore reads a .helmignore's patterns (none if it has none).
func readIgnore(file string) ([]string, error) {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var patterns []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	return patterns, nil
}

// ignored applies .helmignore's rules as Helm's pkg/ignore does for the patterns charts use: a
// pattern ending in / matches directories only; one with a / inside matches the path from the
// chart's root; any other matches a name at any depth. A negation (!pattern), which re-includes
// a file in Helm, is skipped: no chart packaged here has one.
func ignored(patterns []string, rel string, dir bool) bool {
	base := path.Base(rel)
	for _, p := range patterns {
		if strings.HasPrefix(p, "!") {
			continue
		}
		if dirOnly, ok := strings.CutSuffix(p, "/"); ok {
			if dir {
				if m, _ := path.Match(dirOnly, base); m {
					return true
				}
			}
			continue
		}
		if strings.Contains(p, "/") {
			if m, _ := path.Match(p, rel); m {
				return true
			}
			continue
		}
		if m, _ := path.Match(p, base); m {
			return true
		}
	}
	return false
}
