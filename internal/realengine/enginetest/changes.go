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
)

// computeDomainType is the ComputeDomain's resource type, the one resource a change replaces.
var computeDomainType = tokens.Type("kubernetes:" + topology.ComputeDomainAPIVersion + ":" + topology.ComputeDomainKind)

// poolEdit is one key a user sets on one pool of a running stack's file.
type poolEdit struct{ pool, key, value string }

// StackChanges are the change each stack makes in the tier after its first up: what a user of a
// running stack edits in its file. TestEveryStackHasAChange (internal/realengine) fails until a
// stack added to stacks/ has one here.
var StackChanges = map[string][]poolEdit{
	"dev":             {{"gpu", "nodes", "2"}},
	"g6e-efa":         {{"gpu", "nodes", "2"}},
	"g6e-ena":         {{"gpu", "nodes", "2"}},
	"gb200-nvl72":     {{"nvl", "nodes", "9"}}, // a u-p6e-gb200x72's worth down to a u-p6e-gb200x36's
	"karpenter-p5":    {{"gpu", "maxNodes", "2"}},
	"mixed":           {{"train", "capacityReservationId", "cr-0fedcba9876543210"}, {"infer", "maxNodes", "2"}},
	"p4d-custom-ami":  {{"gpu", "nodes", "3"}},
	"p4d-efa":         {{"gpu", "nodes", "3"}},
	"p4d-pod-per-gpu": {{"gpu", "nodes", "2"}},
	"p5-efa":          {{"gpu", "nodes", "4"}},
}

// checkChange edits the workspace's stack file as StackChanges says and runs `pulumi up`. What
// the topology core makes of the edited file decides the outcome: a file it refuses must fail
// the up before anything changed; a file it accepts must be applied whole,
// in place: no resource replaced or deleted (a replaced node group or cluster takes every node
// with it) but a ComputeDomain, and at least one updated.
func (d *Deployment) checkChange(ctx context.Context) {
	edits, ok := StackChanges[d.name]
	if !ok {
		d.t.Fatalf("%s: no change in enginetest.StackChanges", d.name)
	}
	file := d.Env.StackFile(d.name)
	if err := editPools(file, edits); err != nil {
		d.t.Fatal(err)
	}
	spec, refused := topology.LoadStack(file)
	var steps []string
	err := d.watchSteps(&steps, d.up(ctx))
	if refused != nil {
		if err == nil {
			d.t.Errorf("%s: the core refuses %v, yet pulumi up applied it: %v", d.name, edits, refused)
		}
		for _, s := range steps {
			d.t.Errorf("%s: pulumi up of a refused change (%v) still did: %s", d.name, refused, s)
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
		if r.Type != "kubernetes:core/v1:Service" || !strings.Contains(r.URN, "$kubernetes:helm.sh/v4:Chart$") {
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
