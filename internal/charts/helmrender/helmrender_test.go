package helmrender

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucluster/gpucluster/components/dradriver"
	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/kueue"
	"github.com/gpucluster/gpucluster/components/trainer"
	"github.com/gpucluster/gpucluster/internal/charts"
	"github.com/gpucluster/gpucluster/internal/k8sobj"
	"github.com/gpucluster/gpucluster/internal/plan"
	"github.com/gpucluster/gpucluster/test/realengine"
)

// publishedCharts starts the harness's registry stand-in with the charts as their releases
// publish them (packaged from their sources in the module cache), and points this process at it.
func publishedCharts(t *testing.T) func() []string {
	t.Helper()
	s, err := realengine.Published()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := s.WriteCA(ca); err != nil {
		t.Fatal(err)
	}
	for k, v := range s.Env(ca) {
		t.Setenv(k, v)
	}
	return s.Requests
}

// TestRendersThePublishedChart renders Kueue's chart as its release publishes it: its CRDs,
// controller, webhooks and roles, every namespaced object with a namespace (the release's where
// the template names none), the values applied, hooks left out; the second render reads the
// archive from the cache.
func TestRendersThePublishedChart(t *testing.T) {
	requests := publishedCharts(t)
	r := New(t.TempDir())
	req := charts.Request{Resource: "k-kueue", Chart: kueue.ChartRef, Version: kueue.ChartVersion, Release: "kueue",
		Namespace: "kueue-system", KubernetesVersion: "1.33",
		Values: map[string]any{"controllerManager": map[string]any{"nodeSelector": map[string]any{"gpucluster.io/pool": "system"}}}}
	got := r.Render(req)
	if got.Reason != "" {
		t.Fatal(got.Reason)
	}
	if !strings.HasPrefix(got.Digest, "sha256:") || len(got.Objects) < 10 {
		t.Fatalf("digest %q, %d objects: want a digest and the chart's objects", got.Digest, len(got.Objects))
	}
	kinds := map[string]int{}
	for _, o := range got.Objects {
		kinds[o.Kind()]++
		if !clusterScoped[o.Group()+"/"+o.Kind()] && o.Namespace() == "" {
			t.Errorf("%s %s has no namespace", o.Kind(), o.Name())
		}
		if ann, _ := o.Manifest["metadata"].(map[string]any)["annotations"].(map[string]any); ann["helm.sh/hook"] != nil {
			t.Errorf("%s %s is a hook: the provider leaves hooks out", o.Kind(), o.Name())
		}
	}
	for _, k := range []string{"CustomResourceDefinition", "Deployment", "ClusterRole", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "Service"} {
		if kinds[k] == 0 {
			t.Errorf("no %s among %v", k, kinds)
		}
	}
	var deploy charts.Object
	for _, o := range got.Objects {
		if o.Kind() == "Deployment" {
			deploy = o
		}
	}
	spec := deploy.Manifest["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
	if deploy.Namespace() != "kueue-system" {
		t.Errorf("Deployment %s in %q: want the release's namespace", deploy.Name(), deploy.Namespace())
	}
	if sel, _ := spec["nodeSelector"].(map[string]any); sel["gpucluster.io/pool"] != "system" {
		t.Errorf("Deployment %s nodeSelector %v: the values did not reach it", deploy.Name(), spec["nodeSelector"])
	}
	blobs := func() int {
		return len(slices.DeleteFunc(requests(), func(r string) bool { return !strings.Contains(r, "/blobs/") }))
	}
	before := blobs()
	again := r.Render(req)
	if again.Reason != "" || len(again.Objects) != len(got.Objects) {
		t.Fatalf("second render: %v, %d objects", again.Reason, len(again.Objects))
	}
	if blobs() != before {
		t.Errorf("the second render fetched the archive again: %v", requests())
	}
}

// TestUnreachableRegistryIsAReason: a registry that cannot be reached gives the chart's reason,
// and no objects.
func TestUnreachableRegistryIsAReason(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1") // nothing listens there
	got := New(t.TempDir()).Render(charts.Request{Chart: kueue.ChartRef, Version: kueue.ChartVersion, Release: "kueue", Namespace: "kueue-system", KubernetesVersion: "1.33"})
	if got.Reason == "" || len(got.Objects) != 0 {
		t.Fatalf("err %v, %d objects: want a reason and nothing rendered", got.Reason, len(got.Objects))
	}
	if !strings.Contains(got.Reason, "registry.k8s.io") {
		t.Errorf("reason %q does not name the registry", got.Reason)
	}
}

// TestCacheFilesAreTheToolsOwn: the cache holds the archive under its digest; a file there with
// other bytes is not trusted (it is fetched again), never read as the chart.
func TestCacheFilesAreTheToolsOwn(t *testing.T) {
	publishedCharts(t)
	dir := t.TempDir()
	r := New(dir)
	req := charts.Request{Chart: kueue.ChartRef, Version: kueue.ChartVersion, Release: "kueue", Namespace: "kueue-system", KubernetesVersion: "1.33"}
	if got := r.Render(req); got.Reason != "" {
		t.Fatal(got.Reason)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "registry.k8s.io", "kueue", "charts", "kueue", "*.tgz"))
	if len(files) != 1 {
		t.Fatalf("cache files %v: want one archive", files)
	}
	if err := os.WriteFile(files[0], []byte("not a chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := r.Render(req); got.Reason != "" || len(got.Objects) == 0 {
		t.Fatalf("with a damaged cache file: %v, %d objects", got.Reason, len(got.Objects))
	}
}

// TestNormalizeAddsOnlyMissingNamespaces: a namespaced object without a namespace gets the
// release's; one with its own keeps it; a built-in cluster-scoped kind and a kind a CRD of the
// render declares cluster-scoped get none.
func TestNormalizeAddsOnlyMissingNamespaces(t *testing.T) {
	obj := func(apiVersion, kind, name, ns string) charts.Object {
		md := map[string]any{"name": name}
		if ns != "" {
			md["namespace"] = ns
		}
		return charts.Object{Source: "t", Manifest: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
	}
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", "")
	crd.Manifest["spec"] = map[string]any{"group": "example.com", "scope": "Cluster", "names": map[string]any{"kind": "Widget"}}
	objs, err := normalize([]charts.Object{
		obj("apps/v1", "Deployment", "d", ""), obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", "kube-system"),
		obj("rbac.authorization.k8s.io/v1", "ClusterRole", "cr", ""), crd, obj("example.com/v1", "Widget", "w", ""),
		obj("example.com/v1", "Gadget", "g", ""),
	}, "rel")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"rel", "kube-system", "", "", "", "rel"}
	for i, o := range objs {
		if o.Namespace() != want[i] {
			t.Errorf("%s %s: namespace %q, want %q", o.Kind(), o.Name(), o.Namespace(), want[i])
		}
	}
	if _, err := normalize([]charts.Object{obj("v1", "ConfigMap", "", "")}, "rel"); err == nil {
		t.Error("an object without a name was accepted")
	}
}

// TestCRDsOfTheChartComeFirst: a chart's crds/ (Karpenter's) come before its templates, as the
// install action writes them, and the Kubernetes version reaches the templates (Karpenter's
// PodDisruptionBudget is policy/v1 from 1.21 on).
func TestCRDsOfTheChartComeFirst(t *testing.T) {
	publishedCharts(t)
	got := New(t.TempDir()).Render(charts.Request{Chart: karpenter.ChartRef, Version: karpenter.ChartVersion, Release: "karpenter",
		Namespace: "kube-system", KubernetesVersion: "1.33",
		Values: map[string]any{"settings": map[string]any{"clusterName": "c", "interruptionQueue": "q"}}})
	if got.Reason != "" {
		t.Fatal(got.Reason)
	}
	crds, seenOther := 0, false
	for _, o := range got.Objects {
		switch {
		case o.Kind() == "CustomResourceDefinition" && seenOther:
			t.Errorf("CRD %s after the templates' objects", o.Name())
		case o.Kind() == "CustomResourceDefinition":
			crds++
		default:
			seenOther = true
		}
		if o.Kind() == "PodDisruptionBudget" && o.APIVersion() != "policy/v1" {
			t.Errorf("PodDisruptionBudget %s: %s, want policy/v1 on Kubernetes 1.33", o.Name(), o.APIVersion())
		}
	}
	if crds < 3 || !seenOther {
		t.Errorf("%d CRDs, templates' objects %v: want Karpenter's NodePool, NodeClaim and EC2NodeClass CRDs, then the rest", crds, seenOther)
	}
}

// inProcess renders with this package, as gpucluster-charts does in its own process.
type inProcess struct{ r *Renderer }

func (p inProcess) Render(reqs []charts.Request) []charts.Rendered {
	var out []charts.Rendered
	for _, q := range reqs {
		out = append(out, p.r.Render(q))
	}
	return out
}

// TestEveryStacksPlanShowsItsChartsObjects plans every stack of stacks/ with its charts rendered
// from the registry stand-in: every chart is rendered, each object is in the bundle under its
// chart, and REVIEW.md names each ClusterRole, webhook and image the charts bring, with the
// chart (Roles and aggregated APIs too); Kueue's webhooks, which gate every Job, fail closed
// (failure policy Fail).
func TestEveryStacksPlanShowsItsChartsObjects(t *testing.T) {
	publishedCharts(t)
	rend := inProcess{New(t.TempDir())}
	files, _ := filepath.Glob("../../../stacks/Pulumi.*.yaml")
	at := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for _, f := range files {
		res, err := plan.Evaluate(f, at, rend)
		if err != nil {
			t.Fatal(err)
		}
		review := string(res.Files["REVIEW.md"])
		kueueHere := false
		for _, c := range res.Charts {
			kueueHere = kueueHere || c.Request.Chart == kueue.ChartRef
			if c.Reason != "" || len(c.Objects) == 0 {
				t.Errorf("%s: chart %s: %d objects, not rendered: %q", f, c.Request.Resource, len(c.Objects), c.Reason)
				continue
			}
			seen[c.Request.Chart] = true
			from := " (chart `" + c.Request.Resource + "`)"
			for _, o := range c.Objects {
				var want []string
				switch o.Kind() {
				case "ClusterRole":
					want = append(want, "- `"+o.Name()+"`"+from+": ")
				case "Role":
					want = append(want, "- `"+o.Name()+"` in namespace `"+o.Namespace()+"`"+from+": ")
				case "APIService":
					want = append(want, "- `"+o.Name()+"`"+from+": every request for ")
				case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
					hooks, _ := o.Manifest["webhooks"].([]any)
					for _, h := range hooks {
						want = append(want, fmt.Sprintf("`%v` of `%s`%s: ", h.(map[string]any)["name"], o.Name(), from))
					}
				}
				for _, spec := range k8sobj.PodSpecs(o.Manifest) {
					for _, key := range []string{"initContainers", "containers"} {
						list, _ := spec[key].([]any)
						for _, ctr := range list {
							want = append(want, fmt.Sprintf("- image `%v` from ", ctr.(map[string]any)["image"]))
						}
					}
				}
				for _, w := range want {
					if !strings.Contains(review, w) {
						t.Errorf("%s: REVIEW.md lacks %q (%s %s)", f, w, o.Kind(), o.Name())
					}
				}
			}
		}
		if strings.Contains(review, "**not rendered**") {
			t.Errorf("%s: REVIEW.md says a chart was not rendered", f)
		}
		for path := range res.Files {
			if strings.HasPrefix(path, "manifests/chart-") && strings.Count(path, "/") == 2 && !strings.HasPrefix(string(res.Files[path]), "# From Helm chart ") {
				t.Errorf("%s: %s is not headed by its chart", f, path)
			}
		}
		if kueueHere && !strings.Contains(review, "failure policy **Fail**") {
			t.Errorf("%s: no webhook of Kueue's fails closed", f)
		}
	}
	for _, ref := range []string{karpenter.ChartRef, kueue.ChartRef, trainer.ChartRef, dradriver.ChartRef} {
		if !seen[ref] {
			t.Errorf("no stack rendered %s: every chart a component installs is in some stack", ref)
		}
	}
}

// TestObjectsAreAsTheProviderChecksThem: a built-in kind goes through its typed form and back,
// keeping only the chart's fields (a CPU count becomes a Quantity's string; a field the type does
// not have goes); a CRD loses a false preserveUnknownFields and its status; a Secret's stringData
// becomes base64 data; read-only metadata goes (provider normalizeInputs).
func TestObjectsAreAsTheProviderChecksThem(t *testing.T) {
	objs, err := decode("t.yaml", []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: d, uid: x}
spec:
  notAField: 1
  template:
    spec:
      containers:
      - name: c
        resources: {limits: {cpu: 2}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ws.example.com}
spec: {group: example.com, preserveUnknownFields: false}
status: {x: 1}
---
apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {k: v}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec: {cpu: 2}
`))
	if err != nil || len(objs) != 4 {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	var got []string
	for _, o := range objs {
		b, _ := json.Marshal(asChecked(o.Manifest))
		got = append(got, string(b))
	}
	want := []string{
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"2"}}}]}}}}`,
		`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"ws.example.com"},"spec":{"group":"example.com"}}`,
		`{"apiVersion":"v1","data":{"k":"dg=="},"kind":"Secret","metadata":{"name":"s"}}`,
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"cpu":2}}`,
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("object %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
