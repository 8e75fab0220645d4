package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"helm.sh/helm/v3/pkg/action"
	helmchart "helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Local sources of what the real provider would fetch over the network, at the pinned versions
// (the harness sets them; nothing else is reachable here):
const (
	// envCharts maps "<chart>@<version>" to a localChart: the chart's source directory at that
	// release (e.g. Karpenter's chart in the karpenter-provider-aws module at the same tag).
	envCharts = "GPUCLUSTER_KUBE_DOUBLE_CHARTS"
	// envFiles maps a ConfigFile's URL to a local copy of that file.
	envFiles = "GPUCLUSTER_KUBE_DOUBLE_FILES"
)

// localChart is a chart's source as its release packages it: a project's release script often
// stamps the version into Chart.yaml and values.yaml only when it packages the chart (Karpenter's
// hack/release/common.sh, publishHelmChart and the image lines before it), so the tree at the tag
// carries the previous release's numbers. Values are those stampings, as dotted paths.
type localChart struct {
	Dir    string         `json:"dir"`
	Values map[string]any `json:"values"`
	// CRDs is a directory of CRD manifests the packaged chart carries in crds/: Karpenter's
	// charts/karpenter/crds is a symbolic link to pkg/apis/crds, which a Go module zip (the
	// local copy's source) leaves out.
	CRDs string `json:"crds"`
	// Dependencies are the source directories of the subcharts the packaged chart carries in
	// charts/ (helm dependency build fetches them when the release packages it): Kubeflow
	// Trainer's JobSet.
	Dependencies []string `json:"dependencies"`
}

func localSources[T any](env string) (map[string]T, error) {
	m := map[string]T{}
	if v := os.Getenv(env); v != "" {
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return nil, fmt.Errorf("%s: %w", env, err)
		}
	}
	return m, nil
}

// component is a Chart or ConfigFile: its output is the resources it registered.
type component struct {
	pulumi.ResourceState
	Resources pulumi.ArrayOutput `pulumi:"resources"`
}

// child is one object a component registered.
type child struct{ pulumi.CustomResourceState }

func (p *kubeProvider) Construct(ctx context.Context, req *pulumirpc.ConstructRequest) (*pulumirpc.ConstructResponse, error) {
	rc := call{Op: "construct", Type: req.GetType(), URN: req.GetName()}
	resp, err := provider.Construct(ctx, req, p.host.EngineConn(), p.construct)
	if err != nil {
		rc.Error = err.Error()
	}
	p.rec.write(rc)
	return resp, err
}

func (p *kubeProvider) construct(ctx *pulumi.Context, typ, name string, inputs provider.ConstructInputs, options pulumi.ResourceOption) (*provider.ConstructResult, error) {
	var render func(map[string]any) ([]*unstructured.Unstructured, string, error)
	switch typ {
	case "kubernetes:helm.sh/v4:Chart":
		render = func(in map[string]any) ([]*unstructured.Unstructured, string, error) { return p.renderChart(name, in) }
	case "kubernetes:yaml/v2:ConfigFile":
		render = func(in map[string]any) ([]*unstructured.Unstructured, string, error) { return p.readConfigFile(in) }
	default:
		return nil, fmt.Errorf("kubernetes double: no component %s (it constructs helm.sh/v4:Chart and yaml/v2:ConfigFile)", typ)
	}
	comp := &component{}
	if err := ctx.RegisterComponentResource(typ, name, comp, options); err != nil {
		return nil, err
	}
	args, err := inputs.Map()
	if err != nil {
		return nil, err
	}
	build := func(in map[string]any) ([]*child, []string, error) {
		objs, prefix, err := render(in)
		if err != nil {
			return nil, nil, err
		}
		if prefix == "" {
			prefix = name
		}
		if p, ok := in["resourcePrefix"].(string); ok {
			prefix = p
		}
		skipAwait, _ := in["skipAwait"].(bool)
		return register(ctx, comp, prefix, objs, skipAwait)
	}
	if ctx.DryRun() {
		// A preview: the real provider renders once every input is known and registers no
		// children otherwise; an apply runs only on known values.
		comp.Resources = args.ToMapOutput().ApplyT(func(in map[string]any) ([]any, error) {
			_, names, err := build(in)
			return asAny(names), err
		}).(pulumi.ArrayOutput)
	} else {
		// An update: every input is known. The component is done when every child is created
		// (the real provider's output is the children's references, which resolve then), so
		// that what depends on the chart waits for its CRDs and its controller.
		resolved := make(chan map[string]any, 1)
		args.ToMapOutput().ApplyT(func(in map[string]any) (int, error) { resolved <- in; return 0, nil })
		children, names, err := build(<-resolved)
		if err != nil {
			return nil, err
		}
		var ids []any
		for _, c := range children {
			ids = append(ids, c.ID())
		}
		comp.Resources = pulumi.All(ids...).ApplyT(func([]any) []any { return asAny(names) }).(pulumi.ArrayOutput)
	}
	if err := ctx.RegisterResourceOutputs(comp, pulumi.Map{"resources": comp.Resources}); err != nil {
		return nil, err
	}
	return provider.NewConstructResult(comp)
}

// renderChart renders a chart as the real provider's helm/v4 Chart does (action.Install with
// DryRun and ClientOnly, hooks left out, CRDs included unless skipCrds, the release named after
// the component, the server's version and API groups as .Capabilities).
func (p *kubeProvider) renderChart(name string, in map[string]any) ([]*unstructured.Unstructured, string, error) {
	chartRef, _ := in["chart"].(string)
	version, _ := in["version"].(string)
	charts, err := localSources[localChart](envCharts)
	if err != nil {
		return nil, "", err
	}
	local, ok := charts[chartRef+"@"+version]
	if !ok {
		return nil, "", fmt.Errorf("kubernetes double: no local copy of chart %s version %s (%s names %d): the double never fetches charts", chartRef, version, envCharts, len(charts))
	}
	ch, err := loader.Load(local.Dir)
	if err != nil {
		return nil, "", err
	}
	if want := chartRef[strings.LastIndex(chartRef, "/")+1:]; ch.Metadata.Name != want {
		return nil, "", fmt.Errorf("kubernetes double: %s holds chart %s, not %s", local.Dir, ch.Metadata.Name, want)
	}
	ch.Metadata.Version, ch.Metadata.AppVersion = version, version
	if local.CRDs != "" {
		files, err := filepath.Glob(filepath.Join(local.CRDs, "*.yaml"))
		if err != nil || len(files) == 0 {
			return nil, "", fmt.Errorf("kubernetes double: no CRDs in %s", local.CRDs)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, "", err
			}
			ch.Files = append(ch.Files, &helmchart.File{Name: "crds/" + filepath.Base(f), Data: data})
		}
	}
	for _, dir := range local.Dependencies {
		dep, err := loader.Load(dir)
		if err != nil {
			return nil, "", err
		}
		ch.AddDependency(dep)
	}
	for path, v := range local.Values {
		setPath(ch.Values, strings.Split(path, "."), v)
	}
	c, err := p.connected()
	if err != nil {
		return nil, "", err
	}
	release := name
	if n, ok := in["name"].(string); ok && n != "" {
		release = n
	}
	namespace, _ := in["namespace"].(string)
	if namespace == "" {
		namespace = "default"
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.Replace, install.DisableHooks = true, true, true, true
	install.IncludeCRDs = in["skipCrds"] != true
	install.ReleaseName, install.Namespace = release, namespace
	kv, err := c.serverVersion()
	if err != nil {
		return nil, "", err
	}
	if install.KubeVersion, err = chartutil.ParseKubeVersion(kv); err != nil {
		return nil, "", err
	}
	if install.APIVersions, err = action.GetVersionSet(c.disc); err != nil {
		return nil, "", err
	}
	values, _ := in["values"].(map[string]any)
	rel, err := install.Run(ch, values)
	if err != nil {
		return nil, "", fmt.Errorf("rendering chart %s %s: %w", chartRef, version, err)
	}
	objs, err := parse([]byte(rel.Manifest))
	if err != nil {
		return nil, "", err
	}
	return objs, "", c.normalize(objs, namespace)
}

func (p *kubeProvider) readConfigFile(in map[string]any) ([]*unstructured.Unstructured, string, error) {
	file, _ := in["file"].(string)
	files, err := localSources[string](envFiles)
	if err != nil {
		return nil, "", err
	}
	path := file
	if strings.Contains(file, "://") {
		local, ok := files[file]
		if !ok {
			return nil, "", fmt.Errorf("kubernetes double: no local copy of %s (%s): the double never fetches files", file, envFiles)
		}
		path = local
	}
	data, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return nil, "", fmt.Errorf("reading YAML file from disk: %w", err)
	}
	objs, err := parse(data)
	if err != nil {
		return nil, "", err
	}
	c, err := p.connected()
	if err != nil {
		return nil, "", err
	}
	return objs, "", c.normalize(objs, "default")
}

// parse reads a multi-document YAML stream, skipping empty documents and expanding Lists.
func parse(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{Object: m}
		if obj.IsList() {
			err := obj.EachListItem(func(o runtime.Object) error {
				out = append(out, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, obj)
	}
}

// normalize checks every object has a kind, apiVersion and name, and puts namespaced objects
// without a namespace in ns (yaml/v2 Normalize). Scope comes from CRDs in the same set first,
// then the server's discovery.
func (c *cluster) normalize(objs []*unstructured.Unstructured, ns string) error {
	crdScope := map[string]string{}
	for _, o := range objs {
		if isKind(o, "apiextensions.k8s.io", "CustomResourceDefinition") {
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
			crdScope[group+"/"+kind] = scope
		}
	}
	for _, o := range objs {
		if o.GetKind() == "" || o.GetAPIVersion() == "" {
			return fmt.Errorf("Kubernetes resources require a kind and apiVersion: %v", o.Object)
		}
		if o.GetName() == "" {
			return fmt.Errorf("Kubernetes resources require a .metadata.name: %v", o.Object)
		}
		if o.GetNamespace() != "" {
			continue
		}
		gvk := o.GroupVersionKind()
		namespaced := false
		if scope, ok := crdScope[gvk.Group+"/"+gvk.Kind]; ok {
			namespaced = scope == "Namespaced"
		} else {
			var err error
			if namespaced, err = c.namespaced(o); err != nil {
				return fmt.Errorf("%s %s: %w", gvk, o.GetName(), err)
			}
		}
		if namespaced {
			o.SetNamespace(ns)
		}
	}
	return nil
}

// register registers the objects as children of the component in the real provider's order
// (yaml/v2 Register): CRDs, then Namespaces, then the rest; an object depends on its namespace
// and a custom resource on its CRD when they are in the same set. Names are
// "<prefix>:<namespace>/<name>" or "<prefix>:<name>". The component's output lists them as
// "<type>::<name>" (the real provider's are resource references, which an apply cannot return).
func register(ctx *pulumi.Context, comp *component, prefix string, objs []*unstructured.Unstructured, skipAwait bool) ([]*child, []string, error) {
	rank := func(o *unstructured.Unstructured) int {
		switch {
		case isKind(o, "apiextensions.k8s.io", "CustomResourceDefinition"):
			return 0
		case isKind(o, "", "Namespace"):
			return 1
		}
		return 2
	}
	var ordered []*unstructured.Unstructured
	for r := 0; r <= 2; r++ {
		for _, o := range objs {
			if rank(o) == r {
				ordered = append(ordered, o)
			}
		}
	}
	registered := map[string]pulumi.Resource{}
	var children []*child
	var names []string
	for _, o := range ordered {
		if skipAwait {
			a := o.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a["pulumi.com/skipAwait"] = "true"
			o.SetAnnotations(a)
		}
		gvk := o.GroupVersionKind()
		var deps []pulumi.Resource
		if d, ok := registered["Namespace/"+o.GetNamespace()]; ok {
			deps = append(deps, d)
		}
		if d, ok := registered["CRD/"+gvk.Group+"/"+gvk.Kind]; ok {
			deps = append(deps, d)
		}
		group := gvk.Group
		if group == "" {
			group = "core"
		}
		token := "kubernetes:" + group + "/" + gvk.Version + ":" + gvk.Kind
		name := prefix + ":" + qualifiedName(o)
		if prefix == "" {
			name = qualifiedName(o)
		}
		props := pulumi.Map{}
		for k, v := range o.Object {
			props[k] = pulumi.Any(v)
		}
		if gvk.Group == "" && gvk.Kind == "Secret" {
			for _, k := range []string{"data", "stringData"} {
				if v, ok := props[k]; ok {
					props[k] = pulumi.ToSecret(v)
				}
			}
		}
		res := &child{}
		if err := ctx.RegisterResource(token, name, props, res, pulumi.Parent(comp), pulumi.DependsOn(deps)); err != nil {
			return nil, nil, err
		}
		switch {
		case isKind(o, "apiextensions.k8s.io", "CustomResourceDefinition"):
			g, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			k, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			registered["CRD/"+g+"/"+k] = res
		case isKind(o, "", "Namespace"):
			registered["Namespace/"+o.GetName()] = res
		}
		children, names = append(children, res), append(names, token+"::"+name)
	}
	return children, names, nil
}

func asAny(names []string) []any {
	out := make([]any, len(names))
	for i, n := range names {
		out[i] = n
	}
	return out
}

// setPath sets a value at a dotted path of nested maps, creating maps on the way.
func setPath(m map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
