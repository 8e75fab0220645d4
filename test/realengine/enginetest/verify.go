package enginetest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gpucluster/gpucluster/components/nodepool"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/components/topology/catalog"
	"github.com/gpucluster/gpucluster/internal/verify"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/gpucluster/gpucluster/test/realengine/record"
)

// VerifiedStacks are the stacks whose lifecycle checks `gpucluster verify` on the live cluster
// (checkVerify): an EFA pool with fabric manager's gate (p5-efa) and one without (g6e-efa).
var VerifiedStacks = []string{"p5-efa", "g6e-efa"}

// joinedNode is a GPU node as EKS registers it for one of the stack's node groups.
type joinedNode struct {
	name, pool string
	obj        map[string]any
}

// effectOfEKS is the Kubernetes taint effect of an EKS node group taint's effect: the node
// group component's map, read backwards.
func effectOfEKS(eks string) string {
	for k8s, e := range nodepool.TaintEffect {
		if e == eks {
			return k8s
		}
	}
	return ""
}

// joinNodes registers the nodes the stack's GPU node groups launched, as EKS and the instances
// would, from what `pulumi up` sent AWS (the aws double's record), not from the spec: the node
// group's labels and taints (startup taints included: EKS puts them on at registration), its
// desired size, the zone of its subnet, the instance type (the node group's or its launch
// template's), and what the device plugins would advertise: the type's GPUs (the catalog) and
// one EFA device per EFA interface of the launch template. The well-known labels are the
// kubelet's and the AWS cloud controller manager's (instance type, zone, the network-node
// layers EC2 reports for the type). Stand-ins: the registration itself (no instance, no
// kubelet); kwok plays each node's kubelet (KwokNode): the agents' pods run on paper, a Job's
// pods complete, and logs are served from files.
func (d *Deployment) joinNodes() []joinedNode {
	calls := d.Calls()
	zoneOf := map[string]string{}
	for zone, id := range d.spec.VPC.PrivateSubnets {
		zoneOf[id] = zone
	}
	// The stack's own calls: an experiment's workspace records several stacks.
	calls = slices.DeleteFunc(calls, func(c record.Call) bool { return !strings.HasPrefix(c.URN, "urn:pulumi:"+d.name+"::") })
	templates := map[string]record.Call{}
	for _, c := range calls {
		if c.Op != "create" && c.Op != "update" || c.Error != "" {
			continue
		}
		switch c.Type {
		case "aws:ec2/subnet:Subnet":
			zoneOf[c.ID], _ = c.Inputs["availabilityZone"].(string)
		case string(launchTemplateType):
			templates[c.ID] = c
		}
	}
	groups := map[string]record.Call{}
	for _, c := range calls {
		if (c.Op == "create" || c.Op == "update") && c.Error == "" && c.Type == "aws:eks/nodeGroup:NodeGroup" && !strings.HasSuffix(c.URN, "-system") {
			groups[c.URN] = c
		}
	}
	var nodes []joinedNode
	for _, urn := range slices.Sorted(maps.Keys(groups)) {
		in := groups[urn].Inputs
		labels := map[string]string{}
		for k, v := range asMap(in["labels"]) {
			labels[k], _ = v.(string)
		}
		pool := labels[topology.LabelPool]
		lt := templates[fmt.Sprint(asMap(in["launchTemplate"])["id"])].Inputs
		instanceType, _ := lt["instanceType"].(string)
		if types := asList(in["instanceTypes"]); len(types) > 0 {
			instanceType, _ = types[0].(string)
		}
		it, ok := catalog.Lookup(instanceType)
		if !ok {
			d.t.Fatalf("%s: node group %s launches %q, which the catalog does not have", d.name, urn, instanceType)
		}
		efa := 0
		for _, ni := range asList(lt["networkInterfaces"]) {
			if t := asMap(ni)["interfaceType"]; t == "efa" || t == topology.InterfaceEFAOnly {
				efa++
			}
		}
		var taints []map[string]any
		for _, t := range asList(in["taints"]) {
			m := asMap(t)
			taints = append(taints, map[string]any{"key": m["key"], "value": m["value"], "effect": effectOfEKS(fmt.Sprint(m["effect"]))})
		}
		subnets := asList(in["subnetIds"])
		desired := int(asMap(in["scalingConfig"])["desiredSize"].(float64))
		for i := range desired {
			name := fmt.Sprintf("%s-%s-%d", d.name, pool, i)
			l := maps.Clone(labels)
			l[topology.LabelInstanceType] = instanceType
			if len(subnets) > 0 {
				l[topology.LabelZone] = zoneOf[fmt.Sprint(subnets[i%len(subnets)])]
			}
			for layer := 1; layer <= it.NetworkNodeLayers; layer++ {
				l[fmt.Sprintf("%s%d", topology.LabelNetworkNodeLayerPrefix, layer)] = fmt.Sprintf("nn-%d-%s", layer, pool)
			}
			// CPU, memory and pods as the EKS image's kubelet reserves them for the type (the
			// topology core's model of its formula), the type's GPUs, and an EFA device per EFA
			// interface the launch template attaches.
			alloc := topology.NodeAllocatable(topology.PoolSpec{Instance: it})
			if efa > 0 {
				alloc[topology.ResourceEFA] = fmt.Sprint(efa)
			}
			nodes = append(nodes, joinedNode{name: name, pool: pool, obj: kubeapi.KwokNode(name, l, taints, alloc)})
		}
	}
	return nodes
}

// checkLiveCluster: the cluster `pulumi up` built, with its GPU nodes. kwok, beside the kubelet
// stand-in that runs the operators' pods, plays the kubelet of the stack's GPU nodes, which join
// (joinNodes); then verify (checkVerify) and the documents' walkthroughs of the stack
// (checkWalkthroughs) run on it, and the nodes go again before the tier's next steps.
func (d *Deployment) checkLiveCluster(ctx context.Context) {
	if !slices.Contains(VerifiedStacks, d.name) {
		return
	}
	d.must(d.server.StartKwokWith(kubeapi.MPIJobKwokOptions))
	nodes := d.joinNodes()
	if len(nodes) == 0 {
		d.t.Fatalf("%s: no GPU node group in the aws double's record", d.name)
	}
	for i, n := range nodes {
		d.must(d.server.CreateKwokNode(n.obj))
		joined, err := d.server.Get(n.obj)
		d.must(err)
		nodes[i].obj = joined // as kwok initialized it: what a fault is mended back to
	}
	defer func() {
		for _, n := range nodes {
			d.server.Delete(n.obj)
		}
	}()
	d.checkVerify(ctx, nodes)
	d.checkWalkthroughs(ctx)
}

// checkVerify: `gpucluster verify` on the live cluster, its GPU nodes joined; the DaemonSet
// controller gives each the agents' pods from the DaemonSets `pulumi up` created, and Kueue,
// running, marks the ClusterQueues `pulumi up` created Active. Before the health gate
// lifts the startup taint, verify names it on every GPU node and nothing else; once it is lifted
// (here by the test, as the gate does: its script is tested against the API server in
// infra/program), verify passes. Then each deliberate fault is named on its node: a node
// advertising no EFA device, a wrong instance type, a node whose EFA label was removed, so that
// the DaemonSet controller takes its EFA device plugin pod away, a node offering less memory
// than its pool's training pods request, and a node that failed its
// health gate, as the gate leaves it (its taint kept, the failed check's label).
func (d *Deployment) checkVerify(ctx context.Context, nodes []joinedNode) {
	kubeconfig, err := d.server.AdminKubeconfig()
	if err != nil {
		d.t.Fatal(err)
	}
	kubectl := verify.Kubectl{Kubeconfig: kubeconfig}
	spec := d.spec.AtTime(d.now())
	// The startup taint, before its gate lifts it.
	var wantTaints []string
	for _, n := range nodes {
		if p := poolSpec(spec, n.pool); len(p.StartupTaints) > 0 {
			wantTaints = append(wantTaints, verify.CodeStartupTaint+"@"+n.name)
		}
	}
	d.verifyUntil(ctx, kubectl, spec, "before the startup taints are lifted", wantTaints)
	for _, n := range nodes {
		d.liftStartupTaints(n, poolSpec(spec, n.pool))
	}
	d.verifyUntil(ctx, kubectl, spec, "on the cluster built to the plan", nil)
	readme := d.readmeVerify(ctx)
	if out, err := readme(); err != nil || !strings.Contains(out, "verify: the cluster matches the plan of stack "+d.name) {
		d.t.Errorf("%s: the README's gpucluster verify on the cluster built to the plan: %v\n%s", d.name, err, out)
	}

	first := nodes[0]
	// The EFA label selects the EFA device plugin and, in a benchmark stack, the EFA counters
	// reader: both go with it.
	efaAgentsGone := []string{verify.CodeLabel + "@" + first.name, verify.CodeAgentMissing + "@" + first.name}
	if poolSpec(spec, first.pool).ReadsEFACounters() {
		efaAgentsGone = append(efaAgentsGone, verify.CodeAgentMissing+"@"+first.name)
	}
	faults := []struct {
		what   string
		status bool // the fault is in the node's status
		apply  func(node map[string]any)
		want   []string
	}{
		{"a node advertising no EFA device", true, func(node map[string]any) {
			asMap(asMap(node["status"])["allocatable"])[topology.ResourceEFA] = "0"
		}, []string{verify.CodeEFAAllocatable + "@" + first.name}},
		{"a node offering less memory than its training pods request", true, func(node map[string]any) {
			asMap(asMap(node["status"])["allocatable"])["memory"] = "1Gi"
		}, []string{verify.CodeTrainingPodsUnfit + "@" + first.name}},
		{"a node of another instance type", false, func(node map[string]any) {
			asMap(asMap(node["metadata"])["labels"])[topology.LabelInstanceType] = "p4d.24xlarge"
		}, []string{verify.CodeInstanceType + "@" + first.name}},
		{"a node without its EFA label, so without its EFA device plugin pod", false, func(node map[string]any) {
			delete(asMap(asMap(node["metadata"])["labels"]), topology.LabelEFA)
		}, efaAgentsGone},
		{"a node that failed its health gate", false, func(node map[string]any) {
			asMap(asMap(node["metadata"])["labels"])[topology.LabelHealthFailed] = topology.HealthCheckEFA
			h := topology.HealthTaint
			asMap(node["spec"])["taints"] = append(asList(asMap(node["spec"])["taints"]), map[string]any{"key": h.Key, "value": h.Value, "effect": h.Effect})
		}, []string{verify.CodeHealthFailed + "@" + first.name}},
	}
	for _, f := range faults {
		if f.status {
			d.must(d.server.ModifyStatus(first.obj, f.apply))
		} else {
			d.must(d.server.Modify(first.obj, f.apply))
		}
		d.verifyUntil(ctx, kubectl, spec, "with "+f.what, f.want)
		if out, err := readme(); err == nil || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(out, "error "+strings.Split(f.want[0], "@")[0]+" [") {
			d.t.Errorf("%s: the README's gpucluster verify with %s: %v\n%s", d.name, f.what, err, out)
		}
		// Restored as it was: labels, then status.
		d.must(d.server.Modify(first.obj, func(now map[string]any) {
			asMap(now["metadata"])["labels"] = asMap(first.obj["metadata"])["labels"]
		}))
		d.liftStartupTaints(first, poolSpec(spec, first.pool))
		d.must(d.server.ModifyStatus(first.obj, func(now map[string]any) { now["status"] = first.obj["status"] }))
		d.verifyUntil(ctx, kubectl, spec, "once "+f.what+" is mended", nil)
	}
}

// readmeVerify is the README's way to the verdict, run as written: the stack's kubeconfig output
// (whose credential plugin is the aws CLI stand-in) into kubeconfig.json, then the gpucluster CLI
// the harness built, in the workspace.
func (d *Deployment) readmeVerify(ctx context.Context) func() (string, error) {
	raw, err := d.Env.CLI(ctx, "stack", "output", "-s", d.name, "kubeconfig", "--show-secrets")
	if err != nil {
		d.Fail("pulumi stack output kubeconfig", err)
	}
	d.must(os.WriteFile(filepath.Join(d.Env.Work, "kubeconfig.json"), []byte(raw), 0o600))
	return func() (string, error) {
		return d.Env.Run(ctx, nil, "gpucluster", "verify", "--stack", d.name, "--kubeconfig", "kubeconfig.json")
	}
}

func (d *Deployment) must(err error) {
	d.t.Helper()
	if err != nil {
		d.t.Fatal(err)
	}
}

// verifyUntil reads the cluster with verify until its findings are want (code@node, in
// order), for up to a minute: the DaemonSet controller and the kubelet stand-in take seconds
// to follow a change, as on EKS.
func (d *Deployment) verifyUntil(ctx context.Context, kubectl verify.Kubectl, spec topology.StackSpec, when string, want []string) {
	d.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := kubectl.Read(ctx, spec)
		if err != nil {
			d.t.Fatalf("%s: verify %s: %v", d.name, when, err)
		}
		r := verify.Check(spec, c)
		var got []string
		for _, f := range r.Findings {
			got = append(got, f.Code+"@"+f.Node)
		}
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			d.t.Fatalf("%s: verify %s: findings %v, want %v:\n%+v", d.name, when, got, want, r.Findings)
		}
		time.Sleep(time.Second)
	}
}

// liftStartupTaints does what fabric manager's gate does once fabric manager serves.
func (d *Deployment) liftStartupTaints(n joinedNode, p topology.PoolSpec) {
	if len(p.StartupTaints) == 0 {
		return
	}
	d.must(d.server.Modify(n.obj, func(obj map[string]any) {
		spec := asMap(obj["spec"])
		spec["taints"] = slices.DeleteFunc(asList(spec["taints"]), func(t any) bool {
			return slices.ContainsFunc(p.StartupTaints, func(st topology.Taint) bool { return asMap(t)["key"] == st.Key })
		})
	}))
}

func poolSpec(spec topology.StackSpec, name string) topology.PoolSpec {
	for _, p := range spec.Pools {
		if p.Name == name {
			return p
		}
	}
	return topology.PoolSpec{}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asList(v any) []any         { l, _ := v.([]any); return l }
