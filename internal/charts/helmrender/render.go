package helmrender

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/gpucluster/gpucluster/internal/charts"
)

// render is what helm.sh/helm/v3 v3.18.6's install action renders for pulumi-kubernetes's
// helm.sh/v4:Chart (provider/v4 pkg/provider/helm/v4/chart.go at f47bc2d6f199: client-only, a
// server dry run, CRDs included, hooks disabled), step by step as pkg/action/install.go's
// RunWithContext and action.go's renderResources take it: dependencies processed with the
// values, the release options of a first install, the chart's kubeVersion checked, the templates
// rendered, NOTES.txt dropped, hooks set apart (not applied), the CRDs of crds/ first and then
// the manifests in Helm's install order. A template's `lookup` finds nothing, as it finds
// nothing on a cluster that does not hold the chart's objects yet (a first `pulumi up`).
func render(archive []byte, req charts.Request) ([]charts.Object, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("loading the chart: %w", err)
	}
	if t := ch.Metadata.Type; t != "" && t != "application" {
		return nil, fmt.Errorf("%s charts are not installable", t)
	}
	raw, err := json.Marshal(req.Values) // a deep copy: Helm writes into the values it is given
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	vals, err := chartutil.ReadValues(raw)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, vals); err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = chartutil.KubeVersion{Version: "v" + req.KubernetesVersion + ".0", Major: majorOf(req.KubernetesVersion), Minor: minorOf(req.KubernetesVersion)}
	options := chartutil.ReleaseOptions{Name: req.Release, Namespace: req.Namespace, Revision: 1, IsInstall: true}
	values, err := chartutil.ToRenderValuesWithSchemaValidation(ch, vals, options, caps, false)
	if err != nil {
		return nil, err
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", kv, caps.KubeVersion.String())
	}
	var e engine.Engine
	files, err := e.Render(ch, values)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	_, manifests, err := releaseutil.SortManifests(files, nil, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	var objs []charts.Object
	// Each file is read as the release manifest holds it, followed by a newline (action.go
	// renderResources: "---\n# Source: %s\n%s\n"): a block scalar at a file's end keeps its
	// final line break.
	for _, crd := range ch.CRDObjects() {
		o, err := decode(crd.Filename, append(crd.File.Data[:len(crd.File.Data):len(crd.File.Data)], '\n'))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	for _, m := range manifests {
		o, err := decode(m.Name, []byte(m.Content+"\n"))
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	if objs, err = normalize(objs, req.Namespace); err != nil {
		return nil, err
	}
	for i := range objs {
		objs[i].Manifest = asChecked(objs[i].Manifest)
	}
	return objs, nil
}

// decode reads every object of one rendered file as the provider's yaml/v2 Parse reads the
// release manifest (yamlDecode: apimachinery's YAMLOrJSONDecoder, YAML as sigs.k8s.io/yaml reads
// it) and Normalize expands it: empty documents are skipped, and a document with a list of items
// (a List; unstructured's IsList) gives its items, lists within it included.
func decode(source string, data []byte) ([]charts.Object, error) {
	var out []charts.Object
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 128)
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		if len(doc) > 0 {
			out = appendExpanded(out, source, doc)
		}
	}
}

func appendExpanded(out []charts.Object, source string, doc map[string]any) []charts.Object {
	items, isList := doc["items"].([]any)
	if !isList {
		return append(out, charts.Object{Source: source, Manifest: doc})
	}
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			out = appendExpanded(out, source, m)
		}
	}
	return out
}

func majorOf(v string) string { major, _, _ := strings.Cut(v, "."); return major }
func minorOf(v string) string {
	_, minor, _ := strings.Cut(v, ".")
	minor, _, _ = strings.Cut(minor, ".")
	return minor
}
