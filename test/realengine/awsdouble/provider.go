// Package awsdouble is a test double of the Pulumi aws provider for the real-engine tests: the
// real aws provider binary is not served here and would need an AWS account. It speaks the
// provider gRPC protocol to the real Pulumi engine, records every call with its inputs
// (test/realengine/record), answers resources with their inputs plus the values only AWS
// computes (internal/fakecloud, shared with the offline engine) and data sources from a table,
// and fails loudly on an invoke it does not know.
package awsdouble

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/gpucluster/gpucluster/internal/fakecloud"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble/schema"
	"github.com/gpucluster/gpucluster/test/realengine/record"
)

// Environment the harness sets for the double.
const (
	// EnvVersion is the plugin version the double reports and serves: the engine starts one
	// double per aws provider version it loads (go.mod's for the program's resources,
	// pulumi-eks's bundled one for its children), each from the plugin directory of its version.
	EnvVersion = "GPUCLUSTER_AWS_DOUBLE_VERSION"
	// EnvSDK is the module directory of the pulumi-aws Go SDK at that version, whose schema
	// Check holds every resource's inputs to (schema.Load).
	EnvSDK = "GPUCLUSTER_AWS_DOUBLE_SDK"
	// EnvEndpoint and EnvCA are what an EKS cluster answers as its endpoint and certificate
	// authority (base64 PEM): the harness's real kube-apiserver, so that the kubeconfig
	// pulumi-eks builds from them reaches it.
	EnvEndpoint = "GPUCLUSTER_AWS_DOUBLE_EKS_ENDPOINT"
	EnvCA       = "GPUCLUSTER_AWS_DOUBLE_EKS_CA"
	// EnvClusters is, where one engine's stacks each have an API server of their own (an
	// experiment's), a JSON object of cluster name → {"endpoint", "ca"}: each EKS cluster answers
	// its own. A cluster it does not name answers EnvEndpoint and EnvCA.
	EnvClusters = "GPUCLUSTER_AWS_DOUBLE_EKS_CLUSTERS"
	// EnvRefuse is a JSON object of "<type>::<name>" → error: creating the resource whose URN
	// ends so fails with that error, as AWS fails one (a test's stand-in for, say, no capacity
	// for an instance type).
	EnvRefuse = "GPUCLUSTER_AWS_DOUBLE_REFUSE"
	// EnvToken is the bearer token that API server accepts, which the aws CLI stand-in
	// (test/realengine/cmd/aws) answers `aws eks get-token` with.
	EnvToken = "GPUCLUSTER_AWS_DOUBLE_EKS_TOKEN"
	// EnvLive names a JSON file of changes made to resources outside Pulumi ({URN: {property:
	// value}}), which Read reports as the live state (a test's stand-in for, say, the expiry's
	// schedule scaling a node group to zero). Read each time, so a test may write it between runs.
	EnvLive = "GPUCLUSTER_AWS_DOUBLE_LIVE"
)

// Provider is the double.
type Provider struct {
	pulumirpc.UnimplementedResourceProviderServer

	rec     *record.Writer
	version string
	schema  *schema.Schema
	cluster clusterAnswer
	// clusters are the answers of clusters with a server of their own, by name (EnvClusters).
	clusters map[string]clusterAnswer

	mu     sync.Mutex
	region string
}

// clusterAnswer is what an aws:eks/cluster:Cluster answers that only EKS computes.
type clusterAnswer struct{ endpoint, ca string }

// ClusterAnswer is one cluster's entry of EnvClusters.
type ClusterAnswer struct {
	Endpoint string `json:"endpoint"`
	CA       string `json:"ca"` // base64 PEM
}

// New returns the double configured from the environment.
func New() (*Provider, error) {
	rec, err := record.Open()
	if err != nil {
		return nil, err
	}
	v := os.Getenv(EnvVersion)
	if v == "" {
		return nil, fmt.Errorf("aws double: %s is unset (the harness sets it to the pulumi-aws SDK version of go.mod)", EnvVersion)
	}
	sdk, err := schema.Load(os.Getenv(EnvSDK))
	if err != nil {
		return nil, fmt.Errorf("aws double %s: %s: %w", v, EnvSDK, err)
	}
	p := &Provider{rec: rec, version: v, schema: sdk, cluster: clusterAnswer{endpoint: os.Getenv(EnvEndpoint), ca: os.Getenv(EnvCA)}}
	if raw := os.Getenv(EnvClusters); raw != "" {
		var named map[string]ClusterAnswer
		if err := json.Unmarshal([]byte(raw), &named); err != nil {
			return nil, fmt.Errorf("aws double: %s: %w", EnvClusters, err)
		}
		p.clusters = map[string]clusterAnswer{}
		for name, a := range named {
			p.clusters[name] = clusterAnswer{endpoint: a.Endpoint, ca: a.CA}
		}
	}
	return p, nil
}

// call is a record line of this double: the provider and the version that served it.
func (p *Provider) call(op string) record.Call {
	return record.Call{Provider: "aws", Version: p.version, Op: op}
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

// plain is a property map as JSON-able Go values for the record (secrets shown as such).
func plain(m resource.PropertyMap) map[string]any {
	return m.MapRepl(nil, func(v resource.PropertyValue) (any, bool) {
		if v.IsSecret() {
			return map[string]any{"secret": v.SecretValue().Element.MapRepl(nil, nil)}, true
		}
		if v.IsComputed() || v.IsOutput() && !v.OutputValue().Known {
			return "<unknown>", true
		}
		return nil, false
	})
}

func (p *Provider) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: p.version}, nil
}

func (p *Provider) GetSchema(context.Context, *pulumirpc.GetSchemaRequest) (*pulumirpc.GetSchemaResponse, error) {
	return &pulumirpc.GetSchemaResponse{Schema: fmt.Sprintf(`{"name":"aws","version":%q}`, p.version)}, nil
}

func (p *Provider) CheckConfig(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
}

func (p *Provider) DiffConfig(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return p.diff(req)
}

func (p *Provider) Configure(_ context.Context, req *pulumirpc.ConfigureRequest) (*pulumirpc.ConfigureResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.region = req.GetVariables()["aws:config:region"]
	if args, err := unmarshal(req.GetArgs()); err == nil {
		if r, ok := args["region"]; ok && r.IsString() {
			p.region = r.StringValue()
		}
	}
	if p.region == "" {
		return nil, fmt.Errorf("aws double: no region configured (aws:region), as the real provider would refuse")
	}
	return &pulumirpc.ConfigureResponse{AcceptSecrets: true, SupportsPreview: true, AcceptResources: true, AcceptOutputs: true}, nil
}

// Check refuses what the aws provider of this version refuses before anything is created: an
// input its resource type does not have, a required one missing, a value of another shape, all
// read from the pulumi-aws SDK of this version (schema) and worded as the bridge words them. A
// refused Check is recorded with its failures.
func (p *Provider) Check(_ context.Context, req *pulumirpc.CheckRequest) (*pulumirpc.CheckResponse, error) {
	urn := resource.URN(req.GetUrn())
	typ := string(urn.Type())
	t, err := p.schema.Resource(typ)
	if err != nil {
		return nil, fmt.Errorf("aws provider %s: %w", p.version, err)
	}
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	failures := schema.Check(t, urn.Name(), news)
	if len(failures) == 0 {
		return &pulumirpc.CheckResponse{Inputs: req.GetNews()}, nil
	}
	c := p.call("check")
	c.Type, c.URN, c.Inputs = typ, string(urn), plain(news)
	resp := &pulumirpc.CheckResponse{Inputs: req.GetNews()}
	var reasons []string
	for _, f := range failures {
		// The bridge leaves the property empty and names the path in the reason.
		resp.Failures = append(resp.Failures, &pulumirpc.CheckFailure{Reason: f.Reason})
		reasons = append(reasons, f.Reason)
	}
	c.Error = strings.Join(reasons, "; ")
	p.rec.Write(c)
	return resp, nil
}

// replaceKeys are inputs whose change replaces an AWS resource rather than updating it (true of
// a name for nearly every AWS resource type).
var replaceKeys = []string{"name", "namePrefix", "nodeGroupName", "clusterName"}

func (p *Provider) Diff(_ context.Context, req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	return p.diff(req)
}

func (p *Provider) diff(req *pulumirpc.DiffRequest) (*pulumirpc.DiffResponse, error) {
	olds, err := unmarshal(req.GetOldInputs())
	if err != nil {
		return nil, err
	}
	if req.GetOldInputs() == nil {
		if olds, err = unmarshal(req.GetOlds()); err != nil {
			return nil, err
		}
	}
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	for _, k := range req.GetIgnoreChanges() {
		delete(olds, resource.PropertyKey(k))
		delete(news, resource.PropertyKey(k))
	}
	resp := &pulumirpc.DiffResponse{Changes: pulumirpc.DiffResponse_DIFF_NONE, HasDetailedDiff: true, DetailedDiff: map[string]*pulumirpc.PropertyDiff{}}
	d := olds.Diff(news)
	if d == nil {
		return resp, nil
	}
	resp.Changes = pulumirpc.DiffResponse_DIFF_SOME
	for _, k := range d.ChangedKeys() {
		key := string(k)
		replace := slices.Contains(replaceKeys, key)
		kind := pulumirpc.PropertyDiff_UPDATE
		switch {
		case d.Added(k):
			kind = pulumirpc.PropertyDiff_ADD
		case d.Deleted(k):
			kind = pulumirpc.PropertyDiff_DELETE
		}
		if replace {
			kind += pulumirpc.PropertyDiff_ADD_REPLACE - pulumirpc.PropertyDiff_ADD // the _REPLACE twin
			resp.Replaces = append(resp.Replaces, key)
		}
		resp.Diffs = append(resp.Diffs, key)
		resp.DetailedDiff[key] = &pulumirpc.PropertyDiff{Kind: kind, InputDiff: true}
	}
	return resp, nil
}

func (p *Provider) Create(_ context.Context, req *pulumirpc.CreateRequest) (*pulumirpc.CreateResponse, error) {
	news, err := unmarshal(req.GetProperties())
	if err != nil {
		return nil, err
	}
	urn := resource.URN(req.GetUrn())
	if req.GetPreview() {
		return &pulumirpc.CreateResponse{Properties: req.GetProperties()}, nil
	}
	typ := string(urn.Type())
	if refusal := refused(string(urn)); refusal != "" {
		c := p.call("create")
		c.Type, c.URN, c.Inputs, c.Error = typ, string(urn), plain(news), refusal
		p.rec.Write(c)
		return nil, fmt.Errorf("%s", refusal)
	}
	id := fakecloud.ID(typ, string(urn))
	out := p.computed(typ, urn.Name(), news, id, nil)
	c := p.call("create")
	c.Type, c.URN, c.ID, c.Inputs = typ, string(urn), id, plain(news)
	p.rec.Write(c)
	props, err := marshal(out)
	return &pulumirpc.CreateResponse{Id: id, Properties: props}, err
}

func (p *Provider) Update(_ context.Context, req *pulumirpc.UpdateRequest) (*pulumirpc.UpdateResponse, error) {
	news, err := unmarshal(req.GetNews())
	if err != nil {
		return nil, err
	}
	if req.GetPreview() {
		return &pulumirpc.UpdateResponse{Properties: req.GetNews()}, nil
	}
	olds, err := unmarshal(req.GetOlds())
	if err != nil {
		return nil, err
	}
	urn := resource.URN(req.GetUrn())
	typ := string(urn.Type())
	out := p.computed(typ, urn.Name(), news, req.GetId(), olds)
	if typ == launchTemplateType {
		out["latestVersion"] = nextTemplateVersion(olds, news)
	}
	c := p.call("update")
	c.Type, c.URN, c.ID, c.Inputs = typ, string(urn), req.GetId(), plain(news)
	p.rec.Write(c)
	props, err := marshal(out)
	return &pulumirpc.UpdateResponse{Properties: props}, err
}

// computed is a resource's state: its inputs, the values AWS computes (fakecloud), and the
// values an old state already had for keys the inputs do not set (an update keeps its ARN).
func (p *Provider) computed(typ, name string, inputs resource.PropertyMap, id string, olds resource.PropertyMap) resource.PropertyMap {
	out := fakecloud.Outputs(typ, name, inputs, id)
	for k, v := range p.answers(typ, out, id) {
		if _, set := out[k]; !set {
			out[k] = v
		}
	}
	for k, v := range olds {
		if _, set := out[k]; !set {
			out[k] = v
		}
	}
	return out
}

func (p *Provider) Read(_ context.Context, req *pulumirpc.ReadRequest) (*pulumirpc.ReadResponse, error) {
	c := p.call("read")
	c.Type, c.URN, c.ID = string(resource.URN(req.GetUrn()).Type()), req.GetUrn(), req.GetId()
	p.rec.Write(c)
	changed, err := liveChanges(req.GetUrn())
	if err != nil || changed == nil {
		return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: req.GetProperties(), Inputs: req.GetInputs()}, err
	}
	// What AWS holds now: the state with the outside changes, in the outputs and the inputs the
	// refresh writes back (as the real provider's Read reports live values in both).
	var out [2]*structpb.Struct
	for i, s := range []*structpb.Struct{req.GetProperties(), req.GetInputs()} {
		props, err := unmarshal(s)
		if err != nil {
			return nil, err
		}
		for k, v := range changed {
			props[resource.PropertyKey(k)] = resource.NewPropertyValue(v)
		}
		if out[i], err = marshal(props); err != nil {
			return nil, err
		}
	}
	return &pulumirpc.ReadResponse{Id: req.GetId(), Properties: out[0], Inputs: out[1]}, nil
}

// liveChanges are the outside changes EnvLive records for a resource (nil for none).
func liveChanges(urn string) (map[string]any, error) {
	path := os.Getenv(EnvLive)
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var live map[string]map[string]any
	if err := json.Unmarshal(b, &live); err != nil {
		return nil, fmt.Errorf("aws double: %s: %w", path, err)
	}
	return live[urn], nil
}

func (p *Provider) Delete(_ context.Context, req *pulumirpc.DeleteRequest) (*emptypb.Empty, error) {
	urn := resource.URN(req.GetUrn())
	c := p.call("delete")
	c.Type, c.URN, c.ID = string(urn.Type()), string(urn), req.GetId()
	p.rec.Write(c)
	return &emptypb.Empty{}, nil
}

func (p *Provider) Invoke(_ context.Context, req *pulumirpc.InvokeRequest) (*pulumirpc.InvokeResponse, error) {
	args, err := unmarshal(req.GetArgs())
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	region := p.region
	p.mu.Unlock()
	out, err := invoke(req.GetTok(), args, region)
	call := p.call("invoke")
	call.Token, call.Inputs = req.GetTok(), plain(args)
	if err != nil {
		call.Error = err.Error()
	}
	p.rec.Write(call)
	if err != nil {
		return nil, err
	}
	ret, err := marshal(out)
	return &pulumirpc.InvokeResponse{Return: ret}, err
}

func (p *Provider) Cancel(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
	return &emptypb.Empty{}, nil
}

// partition is the AWS partition of a region.
func partition(region string) (name, dnsSuffix string) {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn", "amazonaws.com.cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov", "amazonaws.com"
	}
	return "aws", "amazonaws.com"
}

const launchTemplateType = "aws:ec2/launchTemplate:LaunchTemplate"

// nextTemplateVersion is a launch template's latest version after an update: one more when
// anything but its tags changed, since the provider then creates a new template version
// (terraform-provider-aws resourceLaunchTemplateUpdate: every template field and the description
// are "updateKeys"; tags are set on the template without one). A node group that follows the
// latest version then updates to it, as on AWS.
func nextTemplateVersion(olds, news resource.PropertyMap) resource.PropertyValue {
	latest := olds["latestVersion"]
	if !latest.IsNumber() {
		return resource.NewNumberProperty(1)
	}
	for k, v := range news {
		if k == "tags" || k == "tagsAll" {
			continue
		}
		if !v.DeepEquals(olds[k]) {
			return resource.NewNumberProperty(latest.NumberValue() + 1)
		}
	}
	return latest
}

// refused is the error EnvRefuse gives creating urn, "" if none.
func refused(urn string) string {
	raw := os.Getenv(EnvRefuse)
	if raw == "" {
		return ""
	}
	var refusals map[string]string
	if json.Unmarshal([]byte(raw), &refusals) != nil {
		return fmt.Sprintf("aws double: %s is not a JSON object of URN to error", EnvRefuse)
	}
	for key, refusal := range refusals {
		if strings.HasSuffix(urn, key) {
			return refusal
		}
	}
	return ""
}
