// Package plan evaluates the real Pulumi program of a stack offline, as `pulumi preview` would
// but with no credentials and no Pulumi CLI, and writes the review bundle: plan.json, the
// Kubernetes manifests and REVIEW.md.
package plan

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/benchjobs"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/offline"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/charts"
)

// Result is what a plan produced.
type Result struct {
	Spec      topology.StackSpec
	Resources []offline.Resource
	// PolicyTemplates are the inline IAM policies a plan cannot show, with placeholders for the
	// ARNs known at deploy (policyTemplates), by URN.
	PolicyTemplates map[string]any
	Findings        []Finding
	// Charts are the stack's Helm charts, in the program's order: each rendered as pulumi up will
	// apply it, or with the reason it is not.
	Charts []charts.Rendered
	Files  map[string][]byte // bundle path → content
}

// ChartsNotRendered counts the charts the bundle does not show object by object.
func (r *Result) ChartsNotRendered() int {
	n := 0
	for _, c := range r.Charts {
		if c.Reason != "" {
			n++
		}
	}
	return n
}

// Errors counts the error findings: a plan with any fails.
func (r *Result) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == topology.SeverityError {
			n++
		}
	}
	return n
}

// Evaluate plans one stack file in memory as on the instant at, which the caller read from its
// clock once: the support window, the cost and the expiry are all judged on it. An invalid file
// gives topology.ConfigErrors. renderer renders the stack's Helm charts; nil leaves each chart
// as its reference, version and values, saying it was not rendered.
func Evaluate(stackFile string, at time.Time, renderer charts.Renderer) (*Result, error) {
	spec, err := topology.LoadStack(stackFile, at)
	if err != nil {
		return nil, err
	}
	spec = spec.AtTime(at) // what `pulumi up` would apply then: an expired stack's pools at zero
	engine := offline.NewPlanEngine(spec.Stack)
	if err := engine.Run(program.RunSpec(spec)); err != nil {
		return nil, fmt.Errorf("evaluating the program of %s: %w", stackFile, err)
	}
	r := &Result{Spec: spec, Resources: engine.Resources()}
	if r.PolicyTemplates, err = policyTemplates(spec, r.Resources); err != nil {
		return nil, err
	}
	r.Findings = Review(spec)
	r.Charts = renderCharts(spec, r.Resources, renderer)
	r.Files, err = bundle(r)
	return r, err
}

// Write plans a stack file as on the instant at and writes its bundle to dir. Nothing is written when the file is
// invalid or the program fails, nor when dir is anything but a new or empty directory or a
// previous bundle (see writeBundle); the bundle appears whole or not at all.
func Write(stackFile, dir string, at time.Time, renderer charts.Renderer) (*Result, error) {
	protect, err := protectedPaths(stackFile)
	if err != nil {
		return nil, err
	}
	if _, err := checkOutput(dir, protect); err != nil {
		return nil, err // before the program runs: a refused directory costs nothing
	}
	r, err := Evaluate(stackFile, at, renderer)
	if err != nil {
		return nil, err
	}
	return r, writeFiles(r.Files, dir, protect)
}

// protectedPaths are what no bundle directory may contain: the stack file, its project, and
// the working directory.
func protectedPaths(stackFile string) (Protected, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return Protected{}, err
	}
	p := Protected{StackFile: stackFile, WorkDir: cwd, Stack: topology.StackName(stackFile)}
	if project, err := program.ProjectDir(filepath.Dir(stackFile)); err == nil {
		p.ProjectDir = project
	}
	return p, nil
}

// planJSON is plan.json (schema in docs/review.md, "plan.json").
type planJSON struct {
	Project   string         `json:"project"`
	Stack     string         `json:"stack"`
	Source    string         `json:"source"`
	Resources []planResource `json:"resources"`
}

type planResource struct {
	URN       string         `json:"urn"`
	Type      string         `json:"type"`
	Name      string         `json:"name"`
	Parent    string         `json:"parent"`
	Custom    bool           `json:"custom"`
	DependsOn []string       `json:"dependsOn"`
	Inputs    map[string]any `json:"inputs"`
	// PolicyTemplate is an inline IAM policy whose inputs.policy is unknown until deploy, with a
	// placeholder for each ARN AWS gives then (policyTemplates).
	PolicyTemplate any `json:"policyTemplate,omitempty"`
	// Options are what update and destroy do besides the defaults; {} when nothing is set.
	Options offline.Options `json:"options"`
}

func bundle(r *Result) (map[string][]byte, error) {
	files := map[string][]byte{}
	p := planJSON{Project: offline.Project, Stack: r.Spec.Stack, Source: r.Spec.Source, Resources: []planResource{}}
	for _, res := range r.Resources {
		deps := res.Dependencies
		if deps == nil {
			deps = []string{}
		}
		p.Resources = append(p.Resources, planResource{URN: res.URN, Type: res.Type, Name: res.Name, Parent: res.Parent,
			Custom: res.Custom, DependsOn: deps, Inputs: offline.PlainMap(res.Inputs), PolicyTemplate: r.PolicyTemplates[res.URN], Options: res.Options})
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	files["plan.json"] = append(b, '\n')
	manifests, err := manifests(r.Resources, r.Charts)
	if err != nil {
		return nil, err
	}
	if err := benchmarkManifests(r.Spec, manifests); err != nil {
		return nil, err
	}
	for path, content := range manifests {
		files[path] = content
	}
	review, err := reviewMarkdown(r, manifests)
	if err != nil {
		return nil, err
	}
	files["REVIEW.md"] = review
	return files, nil
}

// manifests renders every Kubernetes object as it would be applied, and every Helm chart as its
// reference, version and values, with its objects (chartManifests).
func manifests(resources []offline.Resource, rendered []charts.Rendered) (map[string][]byte, error) {
	out, err := chartManifests(rendered)
	if err != nil {
		return nil, err
	}
	for _, res := range resources {
		if !strings.HasPrefix(res.Type, "kubernetes:") {
			continue
		}
		inputs := offline.PlainMap(res.Inputs)
		var path string
		var doc any
		switch res.Type {
		case ChartType:
			continue // chartManifests
		case "kubernetes:yaml/v2:ConfigFile":
			path = "manifests/configfile-" + res.Name + ".yaml"
			doc = map[string]any{"file": inputs["file"]}
		default:
			path, doc = manifestPath(inputs), inputs
		}
		b, err := yamlDoc(doc)
		if err != nil {
			return nil, err
		}
		if _, taken := out[path]; taken {
			return nil, fmt.Errorf("%s: two objects of the stack would be written to it", path)
		}
		out[path] = b
	}
	return out, nil
}

// manifestPath is the bundle file of one Kubernetes object: manifests/<kind>-<namespace>-<name>.yaml.
func manifestPath(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	kind, _ := obj["kind"].(string)
	return "manifests/" + strings.ToLower(kind) + "-" + strings.Trim(ns+"-"+name, "-") + ".yaml"
}

// benchmarkManifests adds each pool's benchmark objects: applied by hand, not by pulumi up.
func benchmarkManifests(spec topology.StackSpec, files map[string][]byte) error {
	for _, pool := range spec.Pools {
		objs, err := benchjobs.Objects(spec, pool)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			b, err := yamlDoc(obj)
			if err != nil {
				return err
			}
			path := manifestPath(obj)
			if _, taken := files[path]; taken {
				return fmt.Errorf("pool %s: benchmark object %s would overwrite a manifest of the stack", pool.Name, path)
			}
			files[path] = b
		}
	}
	return nil
}

// yamlDoc marshals a JSON-shaped value as YAML with sorted keys (deterministic).
func yamlDoc(v any) ([]byte, error) {
	var sb strings.Builder
	enc := yaml.NewEncoder(&sb)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(sb.String()), enc.Close()
}
