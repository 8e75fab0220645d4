package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// Environment the harness sets.
const (
	// envToken is the bearer token of the harness's API server. The real provider runs the
	// kubeconfig's exec plugin (`aws eks get-token`), which needs AWS; the double uses the
	// server's own admin token instead and takes nothing else from the kubeconfig's user.
	envToken = "GPUCLUSTER_KUBE_DOUBLE_TOKEN"
	// envAwait bounds every await of readiness (the real provider's default is 10 minutes): the
	// tests shorten it, so that a pod nothing can place fails in minutes.
	envAwait = "GPUCLUSTER_KUBE_DOUBLE_AWAIT_SECONDS"
	// deleteTimeout bounds the wait for a deleted object to be gone: the real provider's default
	// (10 minutes), never shortened. A deletion is slow, not stuck, on a loaded machine: the
	// apiextensions server took over 2 minutes to finish a Karpenter CRD's deletion while every
	// test package ran at once on two cores, and the 120 s await failed a correct destroy.
	deleteTimeout = 10 * time.Minute
)

// fieldManager is the server-side apply field manager of every object the double applies.
const fieldManager = "pulumi-kubernetes-double"

// cluster is a connection to the API server a kubeconfig names.
type cluster struct {
	server  string
	dyn     dynamic.Interface
	disc    discovery.DiscoveryInterface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	timeout time.Duration
}

// connect reaches the cluster of the kubeconfig's current context, verifying its certificate
// against the kubeconfig's certificate-authority-data (or not, if it says
// insecure-skip-tls-verify) as a real client does.
func connect(kubeconfig string) (*cluster, error) {
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig has no current context %q", cfg.CurrentContext)
	}
	cl, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return nil, fmt.Errorf("the kubeconfig has no cluster %q", kctx.Cluster)
	}
	token := os.Getenv(envToken)
	if token == "" {
		return nil, fmt.Errorf("%s is unset: the harness sets the test API server's token", envToken)
	}
	tls := rest.TLSClientConfig{CAData: cl.CertificateAuthorityData, Insecure: cl.InsecureSkipTLSVerify}
	rc := &rest.Config{Host: cl.Server, BearerToken: token, TLSClientConfig: tls, QPS: 100, Burst: 200}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return nil, err
	}
	cached := memory.NewMemCacheClient(disc)
	timeout := 10 * time.Minute
	if s, err := strconv.Atoi(os.Getenv(envAwait)); err == nil && s > 0 {
		timeout = time.Duration(s) * time.Second
	}
	return &cluster{server: cl.Server, dyn: dyn, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(cached), timeout: timeout}, nil
}

// mapping finds an object's resource, refreshing discovery once when the kind is new (a CRD
// applied a moment ago).
func (c *cluster) mapping(obj *unstructured.Unstructured) (*meta.RESTMapping, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil && meta.IsNoMatchError(err) {
		c.mapper.Reset()
		m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	return m, err
}

func (c *cluster) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, *meta.RESTMapping, error) {
	m, err := c.mapping(obj)
	if err != nil {
		return nil, nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), m, nil
	}
	return c.dyn.Resource(m.Resource), m, nil
}

// namespaced tells whether a kind is namespaced, per the server's discovery.
func (c *cluster) namespaced(obj *unstructured.Unstructured) (bool, error) {
	m, err := c.mapping(obj)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// apply server-side applies an object with strict field validation (the real provider warns on
// an unknown field; the double refuses it, so the tests catch what a real apply would drop),
// retrying while a kind just defined is not yet served, as the real provider does.
func (c *cluster) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	obj = withoutWebhookServer(obj)
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	force := true
	var last error
	for i := 0; i < 10; i++ {
		ri, _, err := c.resource(obj)
		if err == nil {
			var live *unstructured.Unstructured
			live, err = ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data,
				metav1.PatchOptions{FieldManager: fieldManager, Force: &force, FieldValidation: "Strict"})
			if err == nil {
				return live, nil
			}
		}
		last = err
		if !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
			break
		}
		c.mapper.Reset()
		time.Sleep(time.Second)
	}
	return nil, last
}

func (c *cluster) get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, _, err := c.resource(obj)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
}

// remove deletes an object and waits until it is gone. Propagation is Background where the real
// provider uses Foreground: foreground deletion waits on the garbage collector, which the
// harness does not run; the objects the tests create own no dependents that matter.
func (c *cluster) remove(ctx context.Context, obj *unstructured.Unstructured) error {
	ri, _, err := c.resource(obj)
	if meta.IsNoMatchError(err) {
		return nil // the kind is gone with its CRD: so is the object
	}
	if err != nil {
		return err
	}
	policy := metav1.DeletePropagationBackground
	if err := ri.Delete(ctx, obj.GetName(), metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(deleteTimeout)
	for time.Now().Before(deadline) {
		if _, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return fmt.Errorf("%s %s was not deleted within %s", obj.GetKind(), qualifiedName(obj), deleteTimeout)
}

func qualifiedName(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return ns + "/" + obj.GetName()
	}
	return obj.GetName()
}

// serverVersion is the API server's version, for Helm's .Capabilities.
func (c *cluster) serverVersion() (string, error) {
	v, err := c.disc.ServerVersion()
	if err != nil {
		return "", err
	}
	return v.GitVersion, nil
}

func isKind(obj *unstructured.Unstructured, group, kind string) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == group && gvk.Kind == kind
}

// unservedWebhook is where the double points a chart's admission webhooks: a loopback port that
// refuses at once.
const unservedWebhook = "https://127.0.0.1:1"

// withoutWebhookServer is what the double cannot stand in for: no kubelet runs a chart's
// controller, so nothing serves its admission webhooks (Kubeflow Trainer's, Kueue's), and the API
// server would refuse every object they cover (failurePolicy Fail) or wait on a Service no proxy
// routes. The double registers them as the chart wrote them but for whom they call, a port that
// refuses at once, and failurePolicy Ignore: objects they cover are created, checked by their
// CRD's schema only. The webhooks themselves are proven where their real servers run
// (internal/kubeapi, the program's benchmark tests).
func withoutWebhookServer(obj *unstructured.Unstructured) *unstructured.Unstructured {
	if obj.GroupVersionKind().Group != "admissionregistration.k8s.io" ||
		(obj.GetKind() != "MutatingWebhookConfiguration" && obj.GetKind() != "ValidatingWebhookConfiguration") {
		return obj
	}
	obj = obj.DeepCopy()
	hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
	for i, h := range hooks {
		hook, ok := h.(map[string]any)
		if !ok {
			continue
		}
		path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path")
		hook["clientConfig"] = map[string]any{"url": unservedWebhook + path}
		hook["failurePolicy"] = "Ignore"
		hooks[i] = hook
	}
	_ = unstructured.SetNestedSlice(obj.Object, hooks, "webhooks")
	return obj
}
