package plan

import (
	"fmt"
	"strings"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/internal/charts"
)

// ChartType is pulumi-kubernetes's Helm chart component: it renders its chart at `pulumi up` and
// registers each object as its child.
const ChartType = "kubernetes:helm.sh/v4:Chart"

// chartsDir is where a chart's objects go in the bundle: manifests/chart-<resource>/, beside
// its reference manifests/chart-<resource>.yaml.
func chartsDir(resource string) string { return "manifests/chart-" + resource }

// renderCharts asks renderer for every chart the program installs, as the provider will render
// it: the resource's chart, version, values and namespace; the release is the resource's name
// unless the program names one (provider/v4 pkg/provider/helm/v4/chart.go: `name` defaults to
// the resource name); the namespace, the provider's default ("default") unless given.
func renderCharts(spec topology.StackSpec, resources []offline.Resource, renderer charts.Renderer) []charts.Rendered {
	var reqs []charts.Request
	for _, res := range resources {
		if res.Type != ChartType {
			continue
		}
		in := offline.PlainMap(res.Inputs)
		str := func(k string) string { s, _ := in[k].(string); return s }
		values, _ := in["values"].(map[string]any)
		req := charts.Request{Resource: res.Name, Chart: str("chart"), Version: str("version"), Release: str("name"),
			Namespace: str("namespace"), Values: values, KubernetesVersion: spec.Cluster.KubernetesVersion}
		if req.Release == "" {
			req.Release = res.Name
		}
		if req.Namespace == "" {
			req.Namespace = "default"
		}
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil
	}
	if renderer == nil {
		return charts.NotRendered(reqs, "not asked to render charts")
	}
	return renderer.Render(reqs)
}

// chartManifests writes each chart's reference (chart, version, values, and what became of it)
// and, when rendered, each of its objects, headed by where it came from.
func chartManifests(rendered []charts.Rendered) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, c := range rendered {
		q := c.Request
		ref := map[string]any{"chart": q.Chart, "version": q.Version, "release": q.Release, "namespace": q.Namespace, "values": q.Values}
		if c.Reason != "" {
			ref["notRendered"] = c.Reason
		} else {
			ref["digest"], ref["objects"] = c.Digest, len(c.Objects)
		}
		b, err := yamlDoc(ref)
		if err != nil {
			return nil, err
		}
		out[chartsDir(q.Resource)+".yaml"] = b
		for _, o := range c.Objects {
			path := chartsDir(q.Resource) + "/" + strings.TrimPrefix(manifestPath(o.Manifest), "manifests/")
			if _, taken := out[path]; taken {
				return nil, fmt.Errorf("chart %s renders two objects that would be written to %s", q.Resource, path)
			}
			body, err := yamlDoc(o.Manifest)
			if err != nil {
				return nil, err
			}
			head := fmt.Sprintf("# From Helm chart %s %s (%s), %s: release %s in %s, applied by `pulumi up` as a child of %s.\n",
				q.Chart, q.Version, c.Digest, o.Source, q.Release, q.Namespace, q.Resource)
			out[path] = append([]byte(head), body...)
		}
	}
	return out, nil
}

// chartOf is the chart resource a bundle path's object came from ("" for gpucluster's own).
func chartOf(path string) string {
	rest, ok := strings.CutPrefix(path, "manifests/chart-")
	if !ok {
		return ""
	}
	res, _, inDir := strings.Cut(rest, "/")
	if !inDir {
		return ""
	}
	return res
}
