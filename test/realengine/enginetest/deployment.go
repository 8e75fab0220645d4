package enginetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/gpucluster/gpucluster/components/cluster"
	"github.com/gpucluster/gpucluster/components/topology"
	"github.com/gpucluster/gpucluster/infra/program"
	"github.com/gpucluster/gpucluster/internal/plan"
	"github.com/gpucluster/gpucluster/test/destroyorder"
	"github.com/gpucluster/gpucluster/test/kubeapi"
	"github.com/gpucluster/gpucluster/test/realengine"
	"github.com/gpucluster/gpucluster/test/realengine/awsdouble"
	"github.com/gpucluster/gpucluster/test/realengine/record"
)

// StackNames are the stacks in stacks/.
func StackNames(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join(ProjectDir, "stacks", "Pulumi.*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stacks in %s/stacks: %v", ProjectDir, err)
	}
	var names []string
	for _, f := range files {
		names = append(names, topology.StackName(f))
	}
	sort.Strings(names)
	return names
}

// StartCluster is what EKS gives the program: an API server with no CRDs, its scheduler and
// controllers, and the system node group's nodes, joined and Ready (their instances are the aws
// double's).
func StartCluster(t *testing.T, spec topology.StackSpec) *kubeapi.Server {
	t.Helper()
	s, err := kubeapi.StartEmpty()
	if err != nil {
		t.Fatalf("the test kube-apiserver %s could not start: %v", kubeapi.KubernetesVersion, err)
	}
	t.Cleanup(s.Stop)
	if err := s.StartScheduler(); err != nil {
		t.Fatal(err)
	}
	// What the kubernetes provider's awaits wait for: pods that start (the kubelet stand-in),
	// DaemonSet rollouts and Service endpoints, and the garbage collector its foreground
	// deletes wait on.
	// The operators' pods run for real (Kueue, Kubeflow Trainer, JobSet, the MPI operator, the DRA
	// driver's ComputeDomain controller):
	// their webhooks refuse what they refuse on EKS, and their finalizers go only when they
	// remove them. The kubelet stand-in starts first: it finishes pod deletions.
	images, err := realengine.OperatorImages()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartKubeletStandIn(images...); err != nil {
		t.Fatal(err)
	}
	for _, start := range []func() error{s.StartAppControllers, s.StartDaemonSetEndpointsControllers, s.StartGarbageCollector} {
		if err := start(); err != nil {
			t.Fatal(err)
		}
	}
	// The system node group's instances, spread over the VPC's zones as its Auto Scaling group
	// spreads them, labelled by EKS with their zone and instance type.
	for i := range spec.Cluster.SystemNodes.Count {
		name := fmt.Sprintf("%s-system-%d", spec.Stack, i)
		if err := s.CreateReadyNode(kubeapi.Node(name, systemNodeLabels(spec, i), nil, kubeapi.SystemNodeAllocatable)); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// systemNodeLabels are the labels of the system node group's i-th instance: its pool, and its
// zone and instance type as EKS labels them (the Auto Scaling group spreads the instances over
// the VPC's zones).
func systemNodeLabels(spec topology.StackSpec, i int) map[string]string {
	labels := map[string]string{topology.LabelPool: topology.SystemPool, topology.LabelInstanceType: spec.Cluster.SystemNodes.InstanceType}
	if zones := spec.VPC.AvailabilityZones; len(zones) > 0 {
		labels[topology.LabelZone] = zones[i%len(zones)]
	}
	return labels
}

// Deployment is one stack's workspace under the real engine.
type Deployment struct {
	t     *testing.T
	name  string
	spec  topology.StackSpec
	Env   *realengine.Env
	Stack auto.Stack
	Log   bytes.Buffer
	// server is the cluster's API server.
	server *kubeapi.Server
	// started is when the deployment began; its clock runs from tierDay as the wall clock does
	// from started (now).
	started time.Time
	// clock is how far the program's and the CLI's clock has been moved on (an expiry that fired).
	clock atomic.Int64
	// live is the aws double's record of changes made outside Pulumi (awsdouble.EnvLive).
	live string
	// jobController: Kubernetes' Job controller runs (startJobController).
	jobController bool
}

// EnvRecords names a directory where each deployment leaves the aws double's record of its
// stack, <dir>/<stack>.jsonl: one call a line, with provider, version, op, type, urn, inputs.
const EnvRecords = "GPUCLUSTER_TIER_RECORDS"

// keepRecord copies a stack's record to EnvRecords' directory, when set.
func keepRecord(t *testing.T, stack, record string) {
	dir := os.Getenv(EnvRecords)
	if dir == "" {
		return
	}
	b, err := os.ReadFile(record)
	if err == nil {
		if err = os.MkdirAll(dir, 0o755); err == nil {
			err = os.WriteFile(filepath.Join(dir, stack+".jsonl"), b, 0o644)
		}
	}
	if err != nil {
		t.Errorf("%s: keeping the record in %s=%s: %v", stack, EnvRecords, dir, err)
	}
}

// tierDay is the instant every deployment's clock starts at, so that no stack's support window,
// cost or expiry depends on the day the tier runs: Kubernetes 1.35 and 1.36 in EKS standard
// support (components/topology's standardSupportEnds).
var tierDay = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// now is the instant the program runs at, and the gpucluster commands start their clocks at
// (realengine.Env.Clock): tierDay plus the time since the deployment began and any move on.
func (d *Deployment) now() time.Time {
	return tierDay.Add(time.Since(d.started) + time.Duration(d.clock.Load()))
}

func Deploy(t *testing.T, name string) *Deployment { return deployWith(t, name, deployOptions{}) }

// deployOptions change a deployment from the stack as it is.
type deployOptions struct {
	vars map[string]string // variables of its own in the engine's environment
}

func deployWith(t *testing.T, name string, opts deployOptions) *Deployment {
	t.Helper()
	started := time.Now()
	spec, err := topology.LoadStack(filepath.Join(ProjectDir, "stacks", "Pulumi."+name+".yaml"), tierDay)
	if err != nil {
		t.Fatal(err)
	}
	d := &Deployment{t: t, name: name, spec: spec, started: started}
	server := StartCluster(t, spec)
	d.server = server
	if d.Env, err = realengine.NewEnv(t.TempDir(), ProjectDir, NeedTools(t), server); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Env.Close)
	t.Cleanup(func() { keepRecord(t, name, d.Env.Record) })
	d.Env.Clock = d.now
	for k, v := range opts.vars {
		d.Env.SetEnv(k, v)
	}
	d.live = filepath.Join(t.TempDir(), "live.json")
	d.Env.SetEnv(awsdouble.EnvLive, d.live)
	if d.Stack, err = d.Env.Stack(context.Background(), name, program.RunEngine(d.Env.StackFile(name), d.now)); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *Deployment) Fail(what string, err error) {
	d.t.Helper()
	d.t.Fatalf("%s: %s: %v\n--- engine output (last lines) ---\n%s\n%s", d.name, what, err, Tail(d.Log.String(), 80), d.server.PodLogs())
}

func (d *Deployment) Calls() []record.Call {
	d.t.Helper()
	calls, err := d.Env.Calls()
	if err != nil {
		d.t.Fatal(err)
	}
	return calls
}

// checkOutputs: `pulumi stack output` gives every output the README documents, and the README's
// benchmark command (`pulumi stack output benchmarkJobs --json | jq .<pool> | kubectl apply -f -`)
// yields objects the API server accepts (a server-side dry run).
func (d *Deployment) checkOutputs(ctx context.Context) {
	outs, err := d.Stack.Outputs(ctx)
	if err != nil {
		d.Fail("pulumi stack output", err)
	}
	var got []string
	for k := range outs {
		got = append(got, k)
	}
	sort.Strings(got)
	want := DocumentedOutputs(d.t)
	if !slices.Equal(got, want) {
		d.t.Errorf("%s: stack outputs %v, the README documents %v", d.name, got, want)
	}
	if !d.spec.Benchmarks.Enabled {
		return
	}
	raw, err := d.Env.CLI(ctx, "stack", "output", "-s", d.name, "benchmarkJobs", "--json")
	if err != nil {
		d.Fail("pulumi stack output benchmarkJobs", err)
	}
	var jobs map[string]any
	if err := json.Unmarshal([]byte(raw), &jobs); err != nil {
		d.t.Fatalf("%s: benchmarkJobs is not JSON: %v", d.name, err)
	}
	kubeconfig, err := d.Env.Server.AdminKubeconfig()
	if err != nil {
		d.t.Fatal(err)
	}
	for _, pool := range d.spec.Pools {
		list, ok := jobs[pool.Name]
		if !ok {
			d.t.Errorf("%s: benchmarkJobs has no pool %s", d.name, pool.Name)
			continue
		}
		b, _ := json.Marshal(list)
		if out, err := d.Env.Run(ctx, bytes.NewReader(b), "kubectl", "--kubeconfig", kubeconfig, "apply", "--dry-run=server", "-f", "-"); err != nil {
			d.t.Errorf("%s: kubectl apply of pool %s's benchmark jobs: %v\n%s", d.name, pool.Name, err, out)
		}
	}
}

// checkExpire: `gpucluster expire --in <in>` on the stack file, then `pulumi preview --diff` and
// `pulumi up`: the only changes are the expiry's own resources (nothing else may be updated, let
// alone replaced, because a running stack is given an end).
func (d *Deployment) checkExpire(ctx context.Context, in string) {
	d.expire(ctx, in)
	d.onlyExpiry("pulumi preview --diff", func(ch chan<- events.EngineEvent) error {
		_, err := d.Stack.Preview(ctx, optpreview.Diff(), optpreview.EventStreams(ch), optpreview.ProgressStreams(&d.Log))
		return err
	})
	d.onlyExpiry("pulumi up", func(ch chan<- events.EngineEvent) error {
		_, err := d.Stack.Up(ctx, optup.EventStreams(ch), optup.ProgressStreams(&d.Log))
		return err
	})
}

// expire runs `gpucluster expire --in <in>` on the workspace's stack file, as a user would.
func (d *Deployment) expire(ctx context.Context, in string) {
	if out, err := d.Env.Run(ctx, nil, "gpucluster", "expire", "--config", d.Env.StackFile(d.name), "--in", in); err != nil {
		d.Fail("gpucluster expire --in "+in, fmt.Errorf("%v\n%s", err, out))
	}
}

// onlyExpiry runs an operation and checks that every step it takes that is not "same" is one of
// the expiry's resources, and that there is at least one.
func (d *Deployment) onlyExpiry(what string, op func(chan<- events.EngineEvent) error) {
	var steps []string
	if err := d.watchSteps(&steps, op); err != nil {
		d.Fail(what+" after gpucluster expire", err)
	}
	expiry := 0
	for _, s := range steps {
		if strings.Contains(s, "gpucluster:index:Expiry") {
			expiry++
			continue
		}
		d.t.Errorf("%s: after gpucluster expire, %s also does: %s", d.name, what, s)
	}
	if expiry == 0 {
		d.t.Errorf("%s: after gpucluster expire, %s does nothing to an expiry resource", d.name, what)
	}
}

// checkPulumiEKSChildren: what the real pulumi-eks component created through the aws double is
// exactly what REVIEW.md's "Inside pulumi-eks" lists (internal/plan), type, name and count.
func (d *Deployment) checkPulumiEKSChildren(calls []record.Call) {
	clusterName := d.spec.Cluster.Name
	want := plan.ExpectedPulumiEKSChildren(d.spec)
	got := make([]int, len(want))
	for _, c := range calls {
		if c.Op != "create" || !strings.Contains(c.URN, "$eks:index:Cluster$") {
			continue
		}
		u := resource.URN(c.URN)
		// Each child is served by the aws provider REVIEW.md names: the bundled one pulumi-eks
		// asks for, the program's for the EKS cluster (the transform sets it).
		if want := cluster.PulumiEKSChildAWSProviderVersion(string(u.Type())); c.Version != want {
			d.t.Errorf("%s: pulumi-eks's %s %s was created by the aws provider %s, REVIEW.md says %s", d.name, u.Type(), u.Name(), c.Version, want)
		}
		// The upgrade policy reaches pulumi-eks's EKS cluster through the program's transform,
		// which the engine applies as the pulumi-eks provider registers the child.
		if string(u.Type()) == cluster.EKSClusterType {
			policy, _ := c.Inputs["upgradePolicy"].(map[string]any)
			if policy["supportType"] != d.spec.Cluster.UpgradePolicy {
				d.t.Errorf("%s: the EKS cluster was created with upgradePolicy %v, the stack says %s", d.name, c.Inputs["upgradePolicy"], d.spec.Cluster.UpgradePolicy)
			}
		}
		matched := false
		for i, w := range want {
			if string(u.Type()) == w.Type && w.Matches(clusterName, u.Name()) {
				got[i]++
				matched = true
				break
			}
		}
		if !matched {
			d.t.Errorf("%s: pulumi-eks created %s %s, which REVIEW.md does not list (internal/plan/pulumieks.go)", d.name, u.Type(), u.Name())
		}
	}
	for i, w := range want {
		if got[i] != w.Count {
			d.t.Errorf("%s: pulumi-eks created %d %s %s-%s, REVIEW.md lists %d", d.name, got[i], w.Type, clusterName, w.Name, w.Count)
		}
	}
}

// deleteOrder collects, from the engine's events of a destroy, the resources it deleted in the
// order it started each delete (the engine starts one only once everything that depends on it
// is gone); the channel it returns gives them once the events end.
func deleteOrder(engine <-chan events.EngineEvent) <-chan []string {
	out := make(chan []string, 1)
	go func() {
		var deleted []string
		for e := range engine {
			if pre := e.ResourcePreEvent; pre != nil && !pre.Planning && pre.Metadata.Op == apitype.OpDelete {
				deleted = append(deleted, pre.Metadata.URN)
			}
		}
		out <- deleted
	}()
	return out
}

// checkDestroyOrder: in the order the engine deleted them (both providers' resources), every
// resource a rule names as a user (test/destroyorder) was deleted before every resource it
// needs.
func (d *Deployment) checkDestroyOrder(deleted []string) {
	at := map[string]int{}
	for i, urn := range deleted {
		at[urn] = i
	}
	res := func(urn string) destroyorder.Resource {
		u := resource.URN(urn)
		return destroyorder.Resource{Type: string(u.Type()), Name: u.Name()}
	}
	for _, rule := range destroyorder.Rules(d.spec) {
		users := 0
		for _, u := range deleted {
			if !rule.IsUser(res(u)) {
				continue
			}
			users++
			needed := 0
			for _, x := range deleted {
				if !rule.Need(res(x)) {
					continue
				}
				needed++
				if at[x] < at[u] {
					d.t.Errorf("%s: destroy deleted %s (%s) before %s, which needs it until its instances are gone", d.name, res(x).Name, rule.What, res(u).Name)
				}
			}
			if needed == 0 {
				d.t.Errorf("%s: destroy deleted no %s after %s", d.name, rule.What, res(u).Name)
			}
		}
		if users == 0 {
			d.t.Errorf("%s: destroy deleted nothing the rule on the %s applies to", d.name, rule.What)
		}
	}
}

// stateResource is a resource of the stack's state as `pulumi stack export` shows it.
type stateResource struct {
	URN         string         `json:"urn"`
	Type        string         `json:"type"`
	Custom      bool           `json:"custom"`
	Parent      string         `json:"parent"`
	DeletedWith string         `json:"deletedWith"`
	Inputs      map[string]any `json:"inputs"`
	Outputs     map[string]any `json:"outputs"`
}

func (d *Deployment) state(ctx context.Context) []stateResource {
	state, err := d.Stack.Export(ctx)
	if err != nil {
		d.Fail("pulumi stack export", err)
	}
	var dep struct {
		Resources []stateResource `json:"resources"`
	}
	if err := json.Unmarshal(state.Deployment, &dep); err != nil {
		d.t.Fatal(err)
	}
	return dep.Resources
}

// DeletedWith maps each resource of the state that the engine deletes with another (the
// deletedWith option: destroy never deletes it on its own) to that other resource.
func (d *Deployment) DeletedWith(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, r := range d.state(ctx) {
		if r.DeletedWith != "" {
			out[r.URN] = r.DeletedWith
		}
	}
	return out
}

// KubernetesObject is an object the kubernetes provider made, as the state records it.
type KubernetesObject struct {
	urn         string
	deletedWith bool
	ref         map[string]any // apiVersion, kind, metadata.name and namespace
}

// KubernetesObjects are the objects of the stack's state that the kubernetes provider made.
func (d *Deployment) KubernetesObjects(ctx context.Context) []KubernetesObject {
	var out []KubernetesObject
	for _, r := range d.state(ctx) {
		if !r.Custom || !strings.HasPrefix(r.Type, "kubernetes:") {
			continue
		}
		md, _ := r.Outputs["metadata"].(map[string]any)
		ref := map[string]any{"apiVersion": r.Outputs["apiVersion"], "kind": r.Outputs["kind"],
			"metadata": map[string]any{"name": md["name"]}}
		if ns, ok := md["namespace"].(string); ok && ns != "" {
			ref["metadata"].(map[string]any)["namespace"] = ns
		}
		out = append(out, KubernetesObject{urn: r.URN, deletedWith: r.DeletedWith != "", ref: ref})
	}
	return out
}

// CheckNothingLeft: the state is empty; every resource the aws double created was deleted, by
// itself or, for one deleted with another, with that other; and no object the kubernetes
// provider made is left in the cluster (say, held in Terminating by a finalizer whose controller
// is gone), but those deleted with the EKS cluster, which takes them when it goes.
func (d *Deployment) CheckNothingLeft(ctx context.Context, calls []record.Call, deletedWith map[string]string, objects []KubernetesObject) {
	for _, r := range d.state(ctx) {
		d.t.Errorf("%s: left in the state after destroy: %s", d.name, r.URN)
	}
	live := map[string]bool{}
	for _, c := range calls {
		switch {
		case c.Error != "":
		case c.Op == "create":
			live[c.URN] = true
		case c.Op == "delete":
			delete(live, c.URN)
		}
	}
	for urn := range live {
		if with, ok := deletedWith[urn]; ok && !live[with] {
			continue
		}
		d.t.Errorf("%s: created and never deleted: %s", d.name, urn)
	}
	for _, o := range objects {
		if o.deletedWith {
			continue
		}
		if obj, err := d.Env.Server.Get(o.ref); err == nil {
			md, _ := obj["metadata"].(map[string]any)
			d.t.Errorf("%s: left in the cluster after destroy: %s %v (deletionTimestamp %v, finalizers %v)", d.name, o.urn, o.ref["metadata"], md["deletionTimestamp"], md["finalizers"])
		}
	}
}

func count(m *map[string]int, op string) int { return deref(m)[op] }

func deref(m *map[string]int) map[string]int {
	if m == nil {
		return nil
	}
	return *m
}

func Tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
