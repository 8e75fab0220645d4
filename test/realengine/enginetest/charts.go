package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/internal/plan"
)

// checkChartsAsPlanned: the review shows what `pulumi up` applied. `gpucluster plan
// --require-charts` of the stack (the CLI and its chart renderer, fetching from the registry
// stand-in the provider fetched from) writes each chart's objects to manifests/chart-<resource>/;
// the kubernetes provider registered each object it applied as a child of the chart's resource.
// For every chart, the two sets of objects (apiVersion, kind, namespace, name) are equal, and so
// is each object's content, except where the plan shows a value known only at deploy
// (offline.Unknown: a queue's name, an ARN) or the state holds a secret (a Secret's data,
// encrypted in the state).
func (d *Deployment) checkChartsAsPlanned(ctx context.Context) {
	dir := filepath.Join(d.t.TempDir(), "review")
	if out, err := d.Env.Run(ctx, nil, "gpucluster", "plan", "--config", d.Env.StackFile(d.name), "--out", dir, "--require-charts"); err != nil {
		d.t.Errorf("%s: gpucluster plan --require-charts: %v\n%s", d.name, err, out)
		return
	}
	planned, err := plannedChartObjects(dir)
	if err != nil {
		d.t.Errorf("%s: reading the plan's chart objects: %v", d.name, err)
		return
	}
	applied := map[string]map[string]map[string]any{}
	chartOf := map[string]string{} // chart URN → its resource name
	state := d.state(ctx)
	for _, r := range state {
		if r.Type == plan.ChartType {
			name := r.URN[strings.LastIndex(r.URN, "::")+2:]
			chartOf[r.URN], applied[name] = name, map[string]map[string]any{}
		}
	}
	for _, r := range state {
		if chart, ok := chartOf[r.Parent]; ok && r.Custom {
			applied[chart][objectKey(r.Inputs)] = r.Inputs
		}
	}
	differs := 0
	errorf := func(format string, args ...any) { differs++; d.t.Errorf(format, args...) }
	if len(applied) != len(planned) {
		errorf("%s: the provider applied %d charts (%v), the plan rendered %d (%v)", d.name, len(applied), topology.SortedKeys(applied), len(planned), topology.SortedKeys(planned))
	}
	for chart, want := range planned {
		got := applied[chart]
		for _, k := range topology.SortedKeys(want) {
			if _, ok := got[k]; !ok {
				errorf("%s: chart %s: the plan shows %s; the provider did not apply it", d.name, chart, k)
				continue
			}
			var diffs []string
			diffObjects(want[k], got[k], "", &diffs)
			if len(diffs) > 0 {
				errorf("%s: chart %s: %s differs from the plan at %d place(s):\n  %s", d.name, chart, k, len(diffs), strings.Join(diffs[:min(len(diffs), 8)], "\n  "))
			}
		}
		for _, k := range topology.SortedKeys(got) {
			if _, ok := want[k]; !ok {
				errorf("%s: chart %s: the provider applied %s; the plan does not show it", d.name, chart, k)
			}
		}
	}
	n := 0
	for _, objs := range planned {
		n += len(objs)
	}
	if differs == 0 {
		d.t.Logf("%s: %d charts, %d objects: the plan's equal what the provider applied", d.name, len(planned), n)
	}
}

// plannedChartObjects reads manifests/chart-<resource>/*.yaml of a bundle, by chart resource.
func plannedChartObjects(bundle string) (map[string]map[string]map[string]any, error) {
	dirs, err := filepath.Glob(filepath.Join(bundle, "manifests", "chart-*"))
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]map[string]any{}
	for _, dir := range dirs {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			continue
		}
		chart := strings.TrimPrefix(filepath.Base(dir), "chart-")
		out[chart] = map[string]map[string]any{}
		files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var obj map[string]any
			if err := yaml.Unmarshal(data, &obj); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out[chart][objectKey(obj)] = obj
		}
	}
	return out, nil
}

// objectKey names an object as the API server does: apiVersion, kind, namespace and name.
func objectKey(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v %v/%v", obj["apiVersion"], obj["kind"], md["namespace"], md["name"])
}

// secretSig marks a secret value in Pulumi's state (sdk/go/common/resource/sig: Secret).
const secretSig = "1b47061264138c4ac30d75fd1eb44270"

// diffObjects appends each place where the applied value is not the planned one.
func diffObjects(want, got any, path string, diffs *[]string) {
	if s, ok := want.(string); ok && strings.Contains(s, offline.Unknown) {
		return // known only at deploy
	}
	if m, ok := got.(map[string]any); ok && m["4dabf18193072939515e22adb298388d"] == secretSig {
		return // encrypted in the state
	}
	wm, wIsMap := want.(map[string]any)
	gm, gIsMap := got.(map[string]any)
	if wIsMap && gIsMap {
		for _, k := range topology.SortedKeys(wm) {
			diffObjects(wm[k], gm[k], path+"."+k, diffs)
		}
		for _, k := range topology.SortedKeys(gm) {
			if _, ok := wm[k]; !ok {
				*diffs = append(*diffs, fmt.Sprintf("%s.%s: applied %s, not in the plan", path, k, jsonText(gm[k])))
			}
		}
		return
	}
	wl, wIsList := want.([]any)
	gl, gIsList := got.([]any)
	if wIsList && gIsList && len(wl) == len(gl) {
		for i := range wl {
			diffObjects(wl[i], gl[i], fmt.Sprintf("%s[%d]", path, i), diffs)
		}
		return
	}
	if jsonText(want) != jsonText(got) {
		*diffs = append(*diffs, fmt.Sprintf("%s: planned %s, applied %s", path, jsonText(want), jsonText(got)))
	}
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
