package charts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/karpenter"
	"github.com/gpucluster/gpucluster/components/kueue"
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
	req := Request{Resource: "k-kueue", Chart: kueue.ChartRef, Version: kueue.ChartVersion, Release: "kueue",
		Namespace: "kueue-system", KubernetesVersion: "1.33",
		Values: map[string]any{"controllerManager": map[string]any{"nodeSelector": map[string]any{"gpucluster.io/pool": "system"}}}}
	got := r.Render(req)
	if got.Err != nil {
		t.Fatal(got.Err)
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
	var deploy Object
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
	if again.Err != nil || len(again.Objects) != len(got.Objects) {
		t.Fatalf("second render: %v, %d objects", again.Err, len(again.Objects))
	}
	if blobs() != before {
		t.Errorf("the second render fetched the archive again: %v", requests())
	}
}

// TestUnreachableRegistryIsAReason: a registry that cannot be reached gives the chart's reason,
// and no objects.
func TestUnreachableRegistryIsAReason(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1") // nothing listens there
	got := New(t.TempDir()).Render(Request{Chart: kueue.ChartRef, Version: kueue.ChartVersion, Release: "kueue", Namespace: "kueue-system", KubernetesVersion: "1.33"})
	if got.Err == nil || len(got.Objects) != 0 {
		t.Fatalf("err %v, %d objects: want a reason and nothing rendered", got.Err, len(got.Objects))
	}
	if !strings.Contains(got.Err.Error(), "registry.k8s.io") {
		t.Errorf("reason %q does not name the registry", got.Err)
	}
}

// TestCacheFilesAreTheToolsOwn: the cache holds the archive under its digest; a file there with
// other bytes is not trusted (it is fetched again), never read as the chart.
func TestCacheFilesAreTheToolsOwn(t *testing.T) {
	publishedCharts(t)
	dir := t.TempDir()
	r := New(dir)
	req := Request{Chart: kueue.ChartRef, Version: kueue.ChartVersion, Release: "kueue", Namespace: "kueue-system", KubernetesVersion: "1.33"}
	if got := r.Render(req); got.Err != nil {
		t.Fatal(got.Err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "registry.k8s.io", "kueue", "charts", "kueue", "*.tgz"))
	if len(files) != 1 {
		t.Fatalf("cache files %v: want one archive", files)
	}
	if err := os.WriteFile(files[0], []byte("not a chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := r.Render(req); got.Err != nil || len(got.Objects) == 0 {
		t.Fatalf("with a damaged cache file: %v, %d objects", got.Err, len(got.Objects))
	}
}

// TestNormalizeAddsOnlyMissingNamespaces: a namespaced object without a namespace gets the
// release's; one with its own keeps it; a built-in cluster-scoped kind and a kind a CRD of the
// render declares cluster-scoped get none.
func TestNormalizeAddsOnlyMissingNamespaces(t *testing.T) {
	obj := func(apiVersion, kind, name, ns string) Object {
		md := map[string]any{"name": name}
		if ns != "" {
			md["namespace"] = ns
		}
		return Object{Source: "t", Manifest: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": md}}
	}
	crd := obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets.example.com", "")
	crd.Manifest["spec"] = map[string]any{"group": "example.com", "scope": "Cluster", "names": map[string]any{"kind": "Widget"}}
	objs, err := normalize([]Object{
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
	if _, err := normalize([]Object{obj("v1", "ConfigMap", "", "")}, "rel"); err == nil {
		t.Error("an object without a name was accepted")
	}
}

// TestCRDsOfTheChartComeFirst: a chart's crds/ (Karpenter's) come before its templates, as the
// install action writes them, and the Kubernetes version reaches the templates (Karpenter's
// PodDisruptionBudget is policy/v1 from 1.21 on).
func TestCRDsOfTheChartComeFirst(t *testing.T) {
	publishedCharts(t)
	got := New(t.TempDir()).Render(Request{Chart: karpenter.ChartRef, Version: karpenter.ChartVersion, Release: "karpenter",
		Namespace: "kube-system", KubernetesVersion: "1.33",
		Values: map[string]any{"settings": map[string]any{"clusterName": "c", "interruptionQueue": "q"}}})
	if got.Err != nil {
		t.Fatal(got.Err)
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
