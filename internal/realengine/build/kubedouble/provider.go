package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
)

// envVersion is the plugin version the double reports (the pulumi-kubernetes SDK's in go.mod).
const envVersion = "GPUCLUSTER_KUBE_DOUBLE_VERSION"

type kubeProvider struct {
	pulumirpc.UnimplementedResourceProviderServer

	host    *provider.HostClient
	rec     *recorder
	version string

	mu      sync.Mutex
	cluster *cluster // nil until configured with a known kubeconfig
}

func newProvider(host *provider.HostClient) (*kubeProvider, error) {
	rec, err := openRecorder()
	if err != nil {
		return nil, err
	}
	v := os.Getenv(envVersion)
	if v == "" {
		return nil, fmt.Errorf("kubernetes double: %s is unset (the harness sets it to the pulumi-kubernetes SDK version of go.mod)", envVersion)
	}
	return &kubeProvider{host: host, rec: rec, version: v}, nil
}

var opts = plugin.MarshalOptions{KeepUnknowns: true, KeepSecrets: true, KeepResources: true, KeepOutputValues: true}

func unmarshal(s *structpb.Struct) (resource.PropertyMap, error) {
	if s == nil {
		return resource.PropertyMap{}, nil
	}
	return plugin.UnmarshalProperties(s, opts)
}

func marshal(m resource.PropertyMap) (*structpb.Struct, error) {
	return plugin.MarshalProperties(m, opts)
}

// object is a property map as a Kubernetes object: secrets revealed (the API server stores them
// as the real provider sends them), unknowns refused.
func object(m resource.PropertyMap) (*unstructured.Unstructured, error) {
	if m.ContainsUnknowns() {
		return nil, fmt.Errorf("the object has unknown values")
	}
	plain := m.MapRepl(nil, func(v resource.PropertyValue) (any, bool) {
		if v.IsSecret() {
			return v.SecretValue().Element.MapRepl(nil, nil), true
		}
		return nil, false
	})
	return &unstructured.Unstructured{Object: plain}, nil
}

func (p *kubeProvider) connected() (*cluster, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cluster == nil {
		return nil, fmt.Errorf("kubernetes double: the provider has no known kubeconfig")
	}
	return p.cluster, nil
}

func (p *kubeProvider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: p.version}, nil
}

func (p *kubeProvider) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":"kubernetes","version":%q}`, p.version)}, nil
}

func (p *kubeProvider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

// kubeconfigOf reads the kubeconfig input, a string or an object (JSON-encoded first), as the
// real provider's parseKubeconfigPropertyValue does.
func kubeconfigOf(m resource.PropertyMap) (string, bool) {
	v, ok := m["kubeconfig"]
	if !ok {
		return "", true
	}
	if v.IsSecret() {
		v = v.SecretValue().Element
	}
	if v.ContainsUnknowns() {
		return "", false
	}
	if v.IsString() {
		return v.StringValue(), true
	}
	b, _ := json.Marshal(v.Mappable())
	return string(b), true
}

// DiffConfig replaces the provider (and so every object it manages) when the cluster it points
// to changes or is not yet known, as the real provider does; any other change is an update.
func (p *kubeProvider) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, news, err := diffInputs(req)
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE}
	if olds.Diff(news) == nil {
		return resp, nil
	}
	resp.Changes = pulumirpc.DiffResponse_DIFF_SOME
	oldCfg, _ := kubeconfigOf(olds)
	newCfg, known := kubeconfigOf(news)
	if !known || serverOf(oldCfg) != serverOf(newCfg) {
		resp.Replaces = []string{"kubeconfig"}
	}
	return resp, nil
}

// diffInputs are a diff's old and new inputs.
func diffInputs(req *pulumirpc.DiffRequest) (olds, news resource.PropertyMap, err error) {
	if olds, err = unmarshal(req.GetOldInputs()); err != nil {
		return nil, nil, err
	}
	news, err = unmarshal(req.GetNews())
	return olds, news, err
}

// serverOf is the API server of a kubeconfig's current context, or "".
func serverOf(kubeconfig string) string {
	cfg, err := clientcmd.Load([]byte(kubeconfig))
	if err != nil {
		return ""
	}
	if kctx, ok := cfg.Contexts[cfg.CurrentContext]; ok {
		if cl, ok := cfg.Clusters[kctx.Cluster]; ok {
			return cl.Server
		}
	}
	return ""
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func (p *kubeProvider) Configure(_ context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	args, err := unmarshal(req.GetArgs())
	if err != nil {
		return nil, err
	}
	cfg, known := kubeconfigOf(args)
	if !known || cfg == "" {
		if v := req.GetVariables()["kubernetes:config:kubeconfig"]; v != "" {
			cfg, known = v, true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if known && cfg != "" {
		c, err := connect(cfg)
		if err != nil {
			return nil, fmt.Errorf("kubernetes double: %w", err)
		}
		p.cluster = c
	}
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true, AcceptResources: true, AcceptOutputs: true}, nil
}

// Check names an unnamed object as the real provider does (metadata.AssignNameIfAutonamable:
// the logical name, a dash and 8 characters seeded by the engine; an update keeps the old name)
// and puts a namespaced object without a namespace in "default".
func (p *kubeProvider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	olds, err := unmarshal(req.GetOlds())
	if err != nil {
		return nil, err
	}
	urn := resource.URN(req.GetUrn())
	meta := resource.PropertyMap{}
	if m, ok := news["metadata"]; ok && m.IsObject() {
		meta = m.ObjectValue().Copy()
	} else if ok {
		return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil // unknown metadata: a preview
	}
	if _, named := meta["name"]; !named {
		name := ""
		if om, ok := olds["metadata"]; ok && om.IsObject() {
			if n, ok := om.ObjectValue()["name"]; ok && n.IsString() {
				name = n.StringValue()
			}
		}
		if name == "" {
			if name, err = resource.NewUniqueName(req.GetRandomSeed(), urn.Name()+"-", 8, 0, []rune("0123456789abcdef")); err != nil {
				return nil, err
			}
		}
		meta["name"] = resource.NewProperty(name)
		annotations := resource.PropertyMap{}
		if a, ok := meta["annotations"]; ok && a.IsObject() {
			annotations = a.ObjectValue().Copy()
		}
		annotations["pulumi.com/autonamed"] = resource.NewProperty("true")
		meta["annotations"] = resource.NewProperty(annotations)
	}
	if _, ok := meta["namespace"]; !ok {
		if c, err := p.connected(); err == nil {
			obj, err := object(resource.PropertyMap{"apiVersion": news["apiVersion"], "kind": news["kind"]})
			if err == nil {
				if namespaced, err := c.namespaced(obj); err == nil && namespaced {
					meta["namespace"] = resource.NewProperty("default")
				}
			}
		}
	}
	news = news.Copy()
	news["metadata"] = resource.NewProperty(meta)
	inputs, err := marshal(news)
	return &pulumirpc.CheckResponse{Inputs: inputs}, err
}

// replacePaths are the fields whose change replaces an object rather than updating it
// (the real provider's forceNewProperties, provider/pkg/provider/diff.go).
func replacePaths(kind string) [][]string {
	paths := [][]string{{"metadata", "name"}, {"metadata", "namespace"}}
	switch kind {
	case "Deployment", "DaemonSet", "StatefulSet", "ReplicaSet":
		paths = append(paths, []string{"spec", "selector"})
	case "Job":
		paths = append(paths, []string{"spec", "selector"}, []string{"spec", "template"})
	}
	return paths
}

func at(m map[string]any, path []string) any {
	var v any = m
	for _, k := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

func (p *kubeProvider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, news, err := diffInputs(req)
	if err != nil {
		return nil, err
	}
	resp := &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE, HasDetailedDiff: true, DetailedDiff: map[string]*pulumirpc.PropertyDiff{}}
	d := olds.Diff(news)
	if d == nil {
		return resp, nil
	}
	resp.Changes = pulumirpc.DiffResponse_DIFF_SOME
	for _, k := range d.ChangedKeys() {
		resp.Diffs = append(resp.Diffs, string(k))
		resp.DetailedDiff[string(k)] = &pulumirpc.PropertyDiff{Kind: pulumirpc.PropertyDiff_UPDATE, InputDiff: true}
	}
	oldObj, newObj := olds.Mappable(), news.Mappable()
	kind, _ := newObj["kind"].(string)
	for _, path := range replacePaths(kind) {
		if news.ContainsUnknowns() || !jsonEqual(at(oldObj, path), at(newObj, path)) {
			key := strings.Join(path, ".")
			resp.Replaces = append(resp.Replaces, key)
			resp.DetailedDiff[key] = &pulumirpc.PropertyDiff{Kind: pulumirpc.PropertyDiff_UPDATE_REPLACE, InputDiff: true}
		}
	}
	// A user-named object that keeps its name must go before its replacement is created.
	autonamed := at(newObj, []string{"metadata", "annotations", "pulumi.com/autonamed"}) == "true"
	sameName := jsonEqual(at(oldObj, []string{"metadata", "name"}), at(newObj, []string{"metadata", "name"})) &&
		jsonEqual(at(oldObj, []string{"metadata", "namespace"}), at(newObj, []string{"metadata", "namespace"}))
	resp.DeleteBeforeReplace = len(resp.Replaces) > 0 && !autonamed && sameName
	return resp, nil
}

// state is what the engine keeps of an object: the live object as the API server returned it.
func state(live *unstructured.Unstructured) (*structpb.Struct, error) {
	return marshal(resource.NewPropertyMapFromMap(live.Object))
}

func (p *kubeProvider) Create(ctx context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	if req.GetPreview() {
		return &pulumirpc.CreateResponse{Properties: req.GetProperties()}, nil
	}
	id, props, err := p.applyAndAwait(ctx, "create", req.GetUrn(), req.GetProperties())
	return &pulumirpc.CreateResponse{Id: id, Properties: props}, err
}

func (p *kubeProvider) Update(ctx context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	if req.GetPreview() {
		return &pulumirpc.UpdateResponse{Properties: req.GetNews()}, nil
	}
	_, props, err := p.applyAndAwait(ctx, "update", req.GetUrn(), req.GetNews())
	return &pulumirpc.UpdateResponse{Properties: props}, err
}

// applyAndAwait applies an object, awaits it and returns its id and state (the live object).
func (p *kubeProvider) applyAndAwait(ctx context.Context, op, urn string, inputs *structpb.Struct) (string, *structpb.Struct, error) {
	live, id, err := p.applyLive(ctx, op, urn, inputs)
	if err != nil {
		return "", nil, err
	}
	props, err := state(live)
	return id, props, err
}

func (p *kubeProvider) applyLive(ctx context.Context, op, urn string, inputs *structpb.Struct) (*unstructured.Unstructured, string, error) {
	news, err := unmarshal(inputs)
	if err != nil {
		return nil, "", err
	}
	c, err := p.connected()
	if err != nil {
		return nil, "", err
	}
	obj, err := object(news)
	if err != nil {
		return nil, "", err
	}
	typ := string(resource.URN(urn).Type())
	id := qualifiedName(obj)
	live, err := c.apply(ctx, obj)
	if err != nil {
		p.rec.write(call{Op: op, Type: typ, URN: urn, ID: id, Inputs: obj.Object, Error: err.Error()})
		return nil, "", fmt.Errorf("resource %q was not successfully created by the Kubernetes API server: %w", urn, err)
	}
	p.rec.write(call{Op: op, Type: typ, URN: urn, ID: id, Inputs: obj.Object})
	if err := c.await(ctx, obj); err != nil {
		return nil, "", fmt.Errorf("resource %q was successfully created, but the Kubernetes API server reported that it failed to fully initialize or become live: %w", urn, err)
	}
	if l, err := c.get(ctx, obj); err == nil {
		live = l
	}
	return live, id, nil
}

// target is the cluster and the object a resource's state names.
func (p *kubeProvider) target(state *structpb.Struct) (*cluster, *unstructured.Unstructured, error) {
	c, err := p.connected()
	if err != nil {
		return nil, nil, err
	}
	props, err := unmarshal(state)
	if err != nil {
		return nil, nil, err
	}
	obj, err := object(props)
	return c, obj, err
}

func (p *kubeProvider) Read(ctx context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	c, obj, err := p.target(req.GetProperties())
	if err != nil {
		return nil, err
	}
	p.rec.write(call{Op: "read", URN: req.GetUrn(), ID: req.GetId()})
	live, err := c.get(ctx, obj)
	if apierrors.IsNotFound(err) {
		return &pulumirpc.ReadResponse{}, nil // gone: the engine drops it from the state
	}
	if err != nil {
		return nil, err
	}
	st, err := state(live)
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: st, Inputs: req.GetInputs()}, err
}

func (p *kubeProvider) Delete(ctx context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	c, obj, err := p.target(req.GetProperties())
	if err != nil {
		return nil, err
	}
	urn := resource.URN(req.GetUrn())
	err = c.remove(ctx, obj)
	rc := call{Op: "delete", Type: string(urn.Type()), URN: string(urn), ID: req.GetId()}
	if err != nil {
		rc.Error = err.Error()
	}
	p.rec.write(rc)
	return &emptypb.Empty{}, err
}

func (p *kubeProvider) Invoke(_ context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	p.rec.write(call{Op: "invoke", Token: req.GetTok(), Error: "unknown invoke"})
	return nil, fmt.Errorf("kubernetes double: unknown invoke %s: the program is not expected to read from the cluster", req.GetTok())
}

func (p *kubeProvider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}
