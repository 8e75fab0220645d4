// Package offline runs the Pulumi program in-process under Pulumi's mocks, with no credentials
// and no Pulumi CLI, and records every resource it registers with its inputs.
package offline

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"

	"github.com/gpucluster/gpucluster/internal/fakecloud"
)

// Project is the Pulumi project name (Pulumi.yaml).
const Project = "gpucluster"

// Resource is one registered resource as the engine received it.
type Resource struct {
	URN    string
	ID     string // "" for components
	Type   string
	Name   string
	Parent string // parent URN; the stack for top-level resources
	Custom bool
	Inputs resource.PropertyMap
	// Dependencies are the URNs the resource explicitly depends on.
	Dependencies []string
	// Options are the resource options that change what update and destroy do.
	Options Options
}

// Options are the resource options a reviewer needs to see: how long the engine waits, which
// changes it ignores, whether it replaces by deleting first, and whether destroy keeps or
// refuses to delete the resource.
type Options struct {
	CustomTimeouts      *Timeouts `json:"customTimeouts,omitempty"`
	IgnoreChanges       []string  `json:"ignoreChanges,omitempty"`
	DeleteBeforeReplace bool      `json:"deleteBeforeReplace,omitempty"`
	Protect             bool      `json:"protect,omitempty"`
	RetainOnDelete      bool      `json:"retainOnDelete,omitempty"`
	// DeletedWith is the URN whose deletion takes this resource with it: destroy does not
	// delete it on its own.
	DeletedWith string `json:"deletedWith,omitempty"`
}

// Timeouts are a resource's customTimeouts, as Go durations ("30m"); "" is the provider's default.
type Timeouts struct {
	Create string `json:"create,omitempty"`
	Update string `json:"update,omitempty"`
	Delete string `json:"delete,omitempty"`
}

// Input returns an input as plain Go values (string, float64, bool, []any, map[string]any),
// or nil when unset.
func (r Resource) Input(key string) any {
	v, ok := r.Inputs[resource.PropertyKey(key)]
	if !ok {
		return nil
	}
	return v.Mappable()
}

// Engine is a pulumi.MockResourceMonitor that records resources and answers with plausible
// outputs: the inputs back, plus the few computed fields the program reads (ids, ARNs, the
// kubeconfig of an EKS cluster). Every value it makes up is marked as such ("mock").
type Engine struct {
	stack string
	// plan: evaluate as a preview (dry run). Values only the cloud computes (ids, ARNs, the
	// kubeconfig) stay unknown instead of being made up.
	plan bool

	// config and secrets are what the engine passes the program (pulumi.RunInfo), as the Pulumi
	// CLI would from the stack file, its ESC environments and secrets.
	config  map[string]string
	secrets []string

	// caller is GetCallerIdentity's Arn ("" for OfflineCaller).
	caller string

	mu        sync.Mutex
	resources []Resource
}

// WithConfig makes the engine pass config (keys "namespace:key", objects as JSON) to the program,
// the keys in secrets as secrets.
func (e *Engine) WithConfig(config map[string]string, secrets ...string) *Engine {
	e.config, e.secrets = config, secrets
	return e
}

// NewEngine returns an engine for one stack that answers with mock values (for tests).
func NewEngine(stack string) *Engine { return &Engine{stack: stack} }

// NewPlanEngine returns an engine that evaluates a stack as `pulumi preview` would: cloud-computed
// values are unknown.
func NewPlanEngine(stack string) *Engine { return &Engine{stack: stack, plan: true} }

// Run evaluates fn as the program of the engine's stack.
func (e *Engine) Run(fn pulumi.RunFunc) error {
	info := func(info *pulumi.RunInfo) {
		info.DryRun = e.plan
		info.Config, info.ConfigSecretKeys = e.config, e.secrets
	}
	return pulumi.RunErr(fn, pulumi.WithMocks(Project, e.stack, e), info)
}

// Resources returns what was registered, sorted by URN.
func (e *Engine) Resources() []Resource {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := append([]Resource(nil), e.resources...)
	sort.Slice(out, func(i, j int) bool { return out[i].URN < out[j].URN })
	return out
}

// NewResource records a resource and returns its id and state.
func (e *Engine) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	parent := ""
	var deps []string
	inputs := args.Inputs
	var opts Options
	if rpc := args.RegisterRPC; rpc != nil {
		opts = options(rpc)
		parent = rpc.GetParent()
		deps = append(deps, rpc.GetDependencies()...)
		sort.Strings(deps)
		// The mock monitor drops unknown inputs; read them again from the request, keeping them,
		// so that a plan marks them unknown instead of showing nothing.
		if raw, err := plugin.UnmarshalProperties(rpc.GetObject(), plugin.MarshalOptions{
			KeepUnknowns: true, KeepSecrets: true, KeepResources: true, KeepOutputValues: true,
		}); err == nil {
			inputs = raw
		}
	}
	urn := e.urn(parent, args.TypeToken, args.Name)
	id := ""
	if args.Custom && !e.plan {
		id = mockID(args.TypeToken, urn)
	}
	e.mu.Lock()
	e.resources = append(e.resources, Resource{URN: urn, ID: id, Type: args.TypeToken, Name: args.Name, Parent: parent,
		Custom: args.Custom, Inputs: inputs, Dependencies: deps, Options: opts})
	e.mu.Unlock()
	if args.TypeToken == stackReferenceType {
		// A stack the offline engine runs was never deployed: a reference to it (the program's
		// reference to its own last up) finds no outputs.
		out := args.Inputs.Copy()
		out["outputs"] = resource.NewObjectProperty(resource.PropertyMap{})
		out["secretOutputNames"] = resource.NewArrayProperty(nil)
		return id, out, nil
	}
	if e.plan {
		return "", args.Inputs, nil // inputs are known; what the cloud adds is not
	}
	return id, outputs(args, id), nil
}

// stackReferenceType is the engine's own resource a StackReference reads.
const stackReferenceType = "pulumi:pulumi:StackReference"

// options reads the resource options from the engine's register request.
func options(rpc *pulumirpc.RegisterResourceRequest) Options {
	o := Options{IgnoreChanges: rpc.GetIgnoreChanges(), DeleteBeforeReplace: rpc.GetDeleteBeforeReplace(), Protect: rpc.GetProtect(),
		RetainOnDelete: rpc.GetRetainOnDelete(), DeletedWith: rpc.GetDeletedWith()}
	if t := rpc.GetCustomTimeouts(); t != nil && (t.GetCreate() != "" || t.GetUpdate() != "" || t.GetDelete() != "") {
		o.CustomTimeouts = &Timeouts{Create: t.GetCreate(), Update: t.GetUpdate(), Delete: t.GetDelete()}
	}
	return o
}

// OfflineCaller is the identity the offline engine answers GetCallerIdentity with: offline, no
// one runs pulumi, so the program's check of adminRoleArns against the caller (which runs for real
// under pulumi preview and up) finds no match.
const OfflineCaller = "arn:aws:sts::" + MockAccount + ":assumed-role/gpucluster-offline/plan"

// WithCaller makes the engine answer GetCallerIdentity with arn (tests of the admin check).
func (e *Engine) WithCaller(arn string) *Engine {
	e.caller = arn
	return e
}

// Call answers invokes. The program makes one, GetCallerIdentity (only with adminRoleArns); any
// other is an error: a new data-source lookup would make the offline plan depend on the cloud,
// which must be a deliberate change.
func (e *Engine) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	if args.Token == "aws:index/getCallerIdentity:getCallerIdentity" {
		caller := e.caller
		if caller == "" {
			caller = OfflineCaller
		}
		return resource.NewPropertyMapFromMap(map[string]any{"accountId": MockAccount, "arn": caller, "userId": "AROAOFFLINE", "id": MockAccount}), nil
	}
	return nil, fmt.Errorf("offline: unexpected invoke %s: the program must not read from the cloud", args.Token)
}

// urn is computed as the Pulumi mock monitor computes it, so Parent fields match.
func (e *Engine) urn(parent, typ, name string) string {
	parentType := tokens.Type("")
	if p := resource.URN(parent); p != "" && p.QualifiedType() != resource.RootStackType {
		parentType = p.QualifiedType()
	}
	return string(resource.NewURN(tokens.QName(e.stack), tokens.PackageName(Project), parentType, tokens.Type(typ), name))
}

func mockID(typ, urn string) string { return fakecloud.ID(typ, urn) }

// MockAccount is the account id in mock ARNs.
const MockAccount = fakecloud.Account

// outputs are the inputs plus what the program reads that only the cloud computes; the
// pulumi-eks cluster, which the real engine runs as a component, answers with a kubeconfig.
func outputs(args pulumi.MockResourceArgs, id string) resource.PropertyMap {
	out := args.Inputs
	if args.Custom {
		out = fakecloud.Outputs(args.TypeToken, args.Name, args.Inputs, id)
	}
	if args.TypeToken == "eks:index:Cluster" {
		name := ""
		if v, ok := args.Inputs["name"]; ok && v.IsString() {
			name = v.StringValue()
		}
		out = out.Copy()
		// pulumi-eks's shape (cluster.js generateKubeconfig): one cluster, and a user whose exec
		// credential runs `aws eks get-token`.
		out["kubeconfigJson"] = resource.NewPropertyValue(fmt.Sprintf(`{"apiVersion":"v1","kind":"Config","clusters":[{"name":"kubernetes","cluster":{"server":"https://%s.mock.eks.amazonaws.com","certificate-authority-data":"TU9DSw=="}}],`+
			`"contexts":[{"name":"aws","context":{"cluster":"kubernetes","user":"aws"}}],"current-context":"aws",`+
			`"users":[{"name":"aws","user":{"exec":{"apiVersion":"client.authentication.k8s.io/v1beta1","command":"aws","args":["eks","get-token","--cluster-name",%q,"--output","json"],"env":[{"name":"KUBERNETES_EXEC_INFO","value":"{\"apiVersion\": \"client.authentication.k8s.io/v1beta1\"}"}]}}}]}`,
			strings.ToUpper(name), name))
	}
	return out
}
