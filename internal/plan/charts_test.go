package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/internal/charts"
)

// objectsRenderer answers each chart with what render gives for it (objects, or a reason): the
// plan's side of rendering, apart from Helm (internal/charts/helmrender renders the published
// charts; its test plans real stacks with them).
type objectsRenderer struct {
	render func(i int, q charts.Request) ([]charts.Object, string)
	asked  []charts.Request
}

func (o *objectsRenderer) Render(reqs []charts.Request) []charts.Rendered {
	var out []charts.Rendered
	for _, q := range reqs {
		objs, reason := o.render(len(o.asked), q)
		o.asked = append(o.asked, q)
		if reason != "" {
			out = append(out, charts.Rendered{Request: q, Reason: reason})
		} else {
			out = append(out, charts.Rendered{Request: q, Digest: "sha256:abc", Objects: objs})
		}
	}
	return out
}

func obj(m map[string]any) charts.Object {
	return charts.Object{Source: "c/templates/x.yaml", Manifest: m}
}

// TestChartObjectsAreReviewedAsTheStacksOwn: a rendered chart's objects are in the bundle under
// manifests/chart-<resource>/, each headed by its chart, and REVIEW.md weighs their power as it
// weighs gpucluster's own: a wildcard rule in bold, each webhook with what it intercepts, its
// failure policy and timeout, a host-level pod, each image with its registry, the object count
// per chart; a chart not rendered says why, in the review and in its reference.
func TestChartObjectsAreReviewedAsTheStacksOwn(t *testing.T) {
	fail, ten := "Fail", 10
	r := &objectsRenderer{render: func(i int, q charts.Request) ([]charts.Object, string) {
		if i > 0 {
			return nil, "registry.k8s.io: connection refused"
		}
		return []charts.Object{
			obj(map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "everything"},
				"rules": []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"*"}}}}),
			obj(map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": map[string]any{"name": "gate"},
				"webhooks": []any{map[string]any{"name": "vjob.example.com", "failurePolicy": fail, "timeoutSeconds": ten,
					"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": []any{"kube-system", q.Namespace}}}},
					"clientConfig":      map[string]any{"service": map[string]any{"namespace": q.Namespace, "name": "svc"}},
					"rules":             []any{map[string]any{"apiGroups": []any{"batch"}, "resources": []any{"jobs"}, "operations": []any{"CREATE", "UPDATE"}}}}}}),
			obj(map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": map[string]any{"name": "agent", "namespace": q.Namespace},
				"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"hostNetwork": true,
					"containers": []any{map[string]any{"name": "a", "image": "busybox:1.36"}}}}}}),
		}, ""
	}}
	res, err := Evaluate(stack("g6e-efa"), testDay, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.asked) < 2 {
		t.Fatalf("asked for %d charts: g6e-efa installs Kueue and the Trainer", len(r.asked))
	}
	for _, q := range r.asked {
		if q.Chart == "" || q.Version == "" || q.Release == "" || q.Namespace == "" || q.KubernetesVersion == "" {
			t.Errorf("request %+v lacks what the provider renders with", q)
		}
	}
	rendered := r.asked[0].Resource
	dir := chartsDir(rendered) + "/"
	ds := string(res.Files[dir+"daemonset-"+r.asked[0].Namespace+"-agent.yaml"])
	if !strings.HasPrefix(ds, "# From Helm chart "+r.asked[0].Chart+" ") || !strings.Contains(ds, "hostNetwork: true") {
		t.Errorf("%s: want the object headed by its chart:\n%s", dir, ds)
	}
	review := string(res.Files["REVIEW.md"])
	from := "(chart `" + rendered + "`)"
	for _, want := range []string{
		"- `everything` " + from + ": **" + "*: * (every verb, every resource, every API group)**",
		"- validating `vjob.example.com` of `gate` " + from + ": CREATE, UPDATE of jobs.batch in namespaces where `kubernetes.io/metadata.name NotIn kube-system, " + r.asked[0].Namespace + "`; failure policy **Fail**; timeout 10 s; calls service `" + r.asked[0].Namespace + "/svc`",
		"- DaemonSet `agent` " + from + ": hostNetwork",
		"- image `busybox:1.36` from docker.io (Docker Hub) (`agent` of chart `" + rendered + "`)",
		"| " + rendered + " | `" + r.asked[0].Chart + "` " + r.asked[0].Version + " | 3: ClusterRole × 1, DaemonSet × 1, ValidatingWebhookConfiguration × 1 |",
		"| " + r.asked[1].Resource + " | `" + r.asked[1].Chart + "` " + r.asked[1].Version + " | not rendered: registry.k8s.io: connection refused |",
		"**not rendered** (registry.k8s.io: connection refused)",
	} {
		if !strings.Contains(review, want) {
			t.Errorf("REVIEW.md lacks %q", want)
		}
	}
	ref := string(res.Files[chartsDir(r.asked[1].Resource)+".yaml"])
	if !strings.Contains(ref, "notRendered: 'registry.k8s.io: connection refused'") {
		t.Errorf("the reference of a chart not rendered does not say why:\n%s", ref)
	}
	if res.ChartsNotRendered() != len(r.asked)-1 {
		t.Errorf("%d charts not rendered, want %d", res.ChartsNotRendered(), len(r.asked)-1)
	}
}

// TestAStackWithoutChartsAsksNothing: the renderer is not asked when the stack has no chart (dev),
// so the README's plan never builds or runs it.
func TestAStackWithoutChartsAsksNothing(t *testing.T) {
	r := &objectsRenderer{render: func(int, charts.Request) ([]charts.Object, string) { return nil, "" }}
	res, err := Evaluate(stack("dev"), testDay, r)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.asked) != 0 || len(res.Charts) != 0 {
		t.Errorf("dev asked for %v", r.asked)
	}
}

// TestABundleWithChartObjectsIsReplacedWhole: a second plan into the bundle replaces it, chart
// directories included; a file of someone else's inside a chart directory stops it.
func TestABundleWithChartObjectsIsReplacedWhole(t *testing.T) {
	r := &objectsRenderer{render: func(_ int, q charts.Request) ([]charts.Object, string) {
		return []charts.Object{obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": q.Namespace}})}, ""
	}}
	dir := filepath.Join(t.TempDir(), "review")
	if _, err := Write(stack("g6e-efa"), dir, testDay, r); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(stack("g6e-efa"), dir, testDay, r); err != nil {
		t.Fatalf("a second plan into its own bundle: %v", err)
	}
	chartDirs, _ := filepath.Glob(filepath.Join(dir, "manifests", "chart-*", "configmap-*-c.yaml"))
	if len(chartDirs) != len(r.asked)/2 {
		t.Fatalf("%d chart objects for %d charts: %v", len(chartDirs), len(r.asked)/2, chartDirs)
	}
	notes := filepath.Join(filepath.Dir(chartDirs[0]), "my-notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(stack("g6e-efa"), dir, testDay, r); err == nil {
		t.Error("a plan replaced a bundle holding a file it did not write")
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Errorf("the file it did not write: %q, %v", b, err)
	}
}
