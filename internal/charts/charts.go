// Package charts is what the review knows of the Helm charts a stack installs: the request for
// each chart as its helm.sh/v4:Chart resource names it, and the objects it creates, rendered by
// gpucluster-charts (cmd/gpucluster-charts, internal/charts/helmrender) as pulumi-kubernetes
// will render them at `pulumi up`.
//
// The rendering is a program of its own so that the gpucluster CLI does not carry Helm: Helm's
// chartutil brings client-go's scheme and with it every k8s.io/api group, 17 % more CPU for a
// cold build of the CLI (576 against 492 CPU-seconds), paid by every first `go run` of the
// README's plan command although `dev` installs no chart. Only a stack with charts runs it.
package charts

import "strings"

// Request is one chart of a stack, as its Chart resource names it.
type Request struct {
	Resource  string         `json:"resource"` // the Chart resource's name
	Chart     string         `json:"chart"`    // oci://host/repository
	Version   string         `json:"version"`
	Release   string         `json:"release"` // the release name: the resource's name when the component gives none
	Namespace string         `json:"namespace"`
	Values    map[string]any `json:"values,omitempty"`
	// KubernetesVersion is the cluster's ("1.33"): the chart sees it as .Capabilities.KubeVersion.
	KubernetesVersion string `json:"kubernetesVersion"`
}

// Object is one object a chart creates.
type Object struct {
	Source   string         `json:"source"`   // the chart file it came from ("karpenter/templates/deployment.yaml")
	Manifest map[string]any `json:"manifest"` // as it will be applied
}

func (o Object) str(keys ...string) string {
	var cur any = o.Manifest
	for _, k := range keys {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}

func (o Object) Kind() string       { return o.str("kind") }
func (o Object) APIVersion() string { return o.str("apiVersion") }
func (o Object) Name() string       { return o.str("metadata", "name") }
func (o Object) Namespace() string  { return o.str("metadata", "namespace") }

// Group is the object's API group ("" for the core group).
func (o Object) Group() string {
	g, _, found := strings.Cut(o.APIVersion(), "/")
	if !found {
		return ""
	}
	return g
}

// Rendered is one chart's outcome: its objects, or why it was not rendered.
type Rendered struct {
	Request Request  `json:"request"`
	Digest  string   `json:"digest,omitempty"` // the chart archive's, as its registry names it
	Objects []Object `json:"objects,omitempty"`
	// Reason says why the chart was not rendered (not fetched, not renderable, no renderer);
	// then Objects is empty: a chart is rendered whole or not at all.
	Reason string `json:"reason,omitempty"`
}

// Renderer renders a stack's charts, one result per request, in order.
type Renderer interface {
	Render(reqs []Request) []Rendered
}

// NotRendered is every request's result when none could be rendered, for the reason given.
func NotRendered(reqs []Request, reason string) []Rendered {
	out := make([]Rendered, len(reqs))
	for i, r := range reqs {
		out[i] = Rendered{Request: r, Reason: reason}
	}
	return out
}
