package enginetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"go.yaml.in/yaml/v3"

	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/internal/plan"
)

// computeDomainType is the ComputeDomain's resource type, the one resource a change replaces.
var computeDomainType = tokens.Type("kubernetes:" + topology.ComputeDomainAPIVersion + ":" + topology.ComputeDomainKind)

// poolEdit is one key a user sets on one pool of a running stack's file.
type poolEdit struct{ pool, key, value string }

// changeStep is one edit of a running stack's file and one `pulumi up` of it. refusal is part
// of the error that up must fail with before it changes anything; "" when the up applies it.
// newTemplate: the edit changes what a launch template is built from; no other step may update
// one, because a new template version replaces every node of its node group.
type changeStep struct {
	edits       []poolEdit
	refusal     string
	newTemplate bool
}

// launchTemplateType is a pool's launch template's resource type.
const launchTemplateType = tokens.Type("aws:ec2/launchTemplate:LaunchTemplate")

// applied is a change step pulumi up applies.
func applied(edits ...poolEdit) changeStep { return changeStep{edits: edits} }

// StackChanges are the changes each stack takes in the tier after its first up, in order: what a
// user of a running stack edits in its file. TestEveryStackHasAChange (test/realengine) fails
// until a stack added to stacks/ has one here.
var StackChanges = map[string][]changeStep{
	"dev":             {applied(poolEdit{"gpu", "nodes", "2"})},
	"g6e-efa":         {applied(poolEdit{"gpu", "nodes", "2"})},
	"g6e-ena":         {applied(poolEdit{"gpu", "nodes", "2"})},
	"gb200-nvl72":     {applied(poolEdit{"nvl", "nodes", "9"})}, // a u-p6e-gb200x72's worth down to a u-p6e-gb200x36's
	"karpenter-p5":    {applied(poolEdit{"gpu", "maxNodes", "2"})},
	"p4d-custom-ami":  {applied(poolEdit{"gpu", "nodes", "3"})},
	"p4d-efa":         {applied(poolEdit{"gpu", "nodes", "3"})},
	"p4d-pod-per-gpu": {applied(poolEdit{"gpu", "nodes", "2"})},
	"p5-efa":          {applied(poolEdit{"gpu", "nodes", "4"})},
	// A new Capacity Block for the running train pool is refused (its 4 nodes fill the block,
	// and EKS would roll them); the steps the refusal gives then take it: stop the pool, change
	// the reservation at zero nodes, start the pool.
	"mixed": {
		{edits: []poolEdit{{"train", "capacityReservationId", "cr-0fedcba9876543210"}, {"infer", "maxNodes", "2"}},
			refusal: "pool train runs 4 node(s) in its Capacity Block, and this change (capacityReservationId cr-0123456789abcdef0 → cr-0fedcba9876543210)"},
		applied(poolEdit{"train", "capacityReservationId", "cr-0123456789abcdef0"}, poolEdit{"train", "stopped", "true"}, poolEdit{"infer", "maxNodes", "2"}),
		{edits: []poolEdit{{"train", "capacityReservationId", "cr-0fedcba9876543210"}}, newTemplate: true},
		applied(poolEdit{"train", "stopped", "false"}),
	},
}

// checkChange takes each of the stack's change steps (StackChanges): it edits the workspace's
// stack file and runs `pulumi up`. A step to be refused, and any file the topology core refuses,
// must fail the up before anything changed. Any other step must be applied whole, in place: no
// resource replaced or deleted (a replaced node group or cluster takes every node with it) but a
// ComputeDomain, and at least one updated.
func (d *Deployment) checkChange(ctx context.Context) {
	steps, ok := StackChanges[d.name]
	if !ok {
		d.t.Fatalf("%s: no change in enginetest.StackChanges", d.name)
	}
	for _, step := range steps {
		d.changeStep(ctx, step)
	}
}

func (d *Deployment) changeStep(ctx context.Context, step changeStep) {
	edits := step.edits
	file := d.Env.StackFile(d.name)
	if err := editPools(file, edits); err != nil {
		d.t.Fatal(err)
	}
	spec, refused := topology.LoadStack(file, d.now())
	var steps []string
	err := d.watchSteps(&steps, d.up(ctx))
	if refused != nil || step.refusal != "" {
		switch {
		case err == nil:
			d.t.Errorf("%s: pulumi up applied %v, which must be refused (core: %v; want %q)", d.name, edits, refused, step.refusal)
		case step.refusal != "" && !strings.Contains(err.Error(), step.refusal):
			d.t.Errorf("%s: pulumi up of %v failed, but not with %q: %v", d.name, edits, step.refusal, err)
		}
		for _, s := range steps {
			d.t.Errorf("%s: pulumi up of a refused change (%v) still did: %s", d.name, edits, s)
		}
		return
	}
	if err != nil {
		d.Fail(fmt.Sprintf("pulumi up of %v", edits), err)
	}
	d.spec = spec
	updated := 0
	for _, s := range steps {
		op, urn, _ := strings.Cut(s, " ")
		switch apitype.OpType(op) {
		case apitype.OpUpdate:
			updated++
			if resource.URN(urn).Type() == launchTemplateType && !step.newTemplate {
				d.t.Errorf("%s: pulumi up of %v updates launch template %s: its node group moves to the new version and replaces every node", d.name, edits, urn)
			}
		case apitype.OpCreate:
		case apitype.OpReplace, apitype.OpCreateReplacement, apitype.OpDeleteReplaced:
			if resource.URN(urn).Type() == computeDomainType {
				continue // its spec cannot change: the plan says it is replaced (REVIEW.md)
			}
			fallthrough
		default:
			d.t.Errorf("%s: pulumi up of %v does %s: a change to a running stack must be made in place", d.name, edits, s)
		}
	}
	if updated == 0 {
		d.t.Errorf("%s: pulumi up of %v updated nothing (steps %v)", d.name, edits, steps)
	}
}

// watchSteps runs an engine operation (a preview plans its steps, an up takes them) and
// collects every step that changes something ("op URN"): a refresh only reads (Pulumi.yaml:
// options.refresh always).
func (d *Deployment) watchSteps(steps *[]string, op func(chan<- events.EngineEvent) error) error {
	ch := make(chan events.EngineEvent)
	done := make(chan struct{})
	go func() {
		for ev := range ch {
			if pre := ev.ResourcePreEvent; pre != nil {
				switch pre.Metadata.Op {
				case apitype.OpSame, apitype.OpRefresh, apitype.OpRead:
				default:
					*steps = append(*steps, string(pre.Metadata.Op)+" "+pre.Metadata.URN)
				}
			}
		}
		close(done)
	}()
	err := op(ch)
	<-done
	return err
}

// editPools sets each edit's key on its pool in a stack file, keeping the rest of the file
// (comments included) as it is.
func editPools(file string, edits []poolEdit) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	pools := topology.MappingValue(topology.MappingValue(doc.Content[0], "config"), topology.ConfigNamespace+":pools")
	if pools == nil || pools.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: no %s:pools list", file, topology.ConfigNamespace)
	}
	for _, e := range edits {
		var pool *yaml.Node
		for _, p := range pools.Content {
			if n := topology.MappingValue(p, "name"); n != nil && n.Value == e.pool {
				pool = p
			}
		}
		if pool == nil {
			return fmt.Errorf("%s: no pool %q", file, e.pool)
		}
		if v := topology.MappingValue(pool, e.key); v != nil {
			v.Value = e.value
			continue
		}
		pool.Content = append(pool.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: e.key}, &yaml.Node{Kind: yaml.ScalarNode, Value: e.value})
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := errors.Join(enc.Encode(&doc), enc.Close()); err != nil {
		return err
	}
	return os.WriteFile(file, out.Bytes(), 0o644)
}

// checkChartNames: every Service a chart rendered has a name Kubernetes accepts (a DNS-1035
// label: 63 characters at most) for the longest cluster name a stack may have, not only for
// this stack's: the stack's cluster name, wherever it stands in a name, is counted at
// topology.MaxClusterNameLength characters.
func (d *Deployment) checkChartNames(ctx context.Context) {
	longest := strings.Repeat("x", topology.MaxClusterNameLength)
	for _, r := range d.state(ctx) {
		if r.Type != "kubernetes:core/v1:Service" || !strings.Contains(r.URN, "$"+plan.ChartType+"$") {
			continue
		}
		md, _ := r.Outputs["metadata"].(map[string]any)
		name, _ := md["name"].(string)
		if n := strings.ReplaceAll(name, d.spec.Cluster.Name, longest); len(n) > 63 {
			d.t.Errorf("%s: the chart's Service %s would be named %s (%d characters) in a cluster of %d-character name: Kubernetes refuses more than 63",
				d.name, name, n, len(n), topology.MaxClusterNameLength)
		}
	}
}
