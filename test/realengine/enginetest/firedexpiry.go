package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/auto/events"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"

	"github.com/gpucluster/gpucluster/components/expiry"
	"github.com/gpucluster/gpucluster/components/k8sargs"
	"github.com/gpucluster/gpucluster/components/topology"
)

// checkFiredExpiry: the stack's expiry (set by checkExpire, an hour ahead) fires as it would on
// AWS — the schedule scales every GPU node group to zero, keeping its maximum (the aws double's
// live state says what EKS then reports), and the expiry CronJob's own commands stop every
// NodePool — and the clock moves two hours on. Then `pulumi up` keeps every pool at zero, and
// `gpucluster expire --in 8h` followed by `pulumi up` gives every pool its size back: each node
// group's scaling and each NodePool's GPU limit as the stack says.
func (d *Deployment) checkFiredExpiry(ctx context.Context) {
	groups := d.gpuNodeGroups()
	live := map[string]any{}
	for urn, scaling := range groups {
		live[urn] = map[string]any{"scalingConfig": map[string]any{"minSize": 0, "desiredSize": 0, "maxSize": scaling["maxSize"]}}
	}
	d.setLive(live)
	stopped := func(topology.PoolSpec) string { return "0" }
	if len(d.karpenterPools()) > 0 {
		d.runExpiryJob(ctx)
		// The Job, not the next up, stopped the NodePools: the up below meets its field manager.
		d.checkNodePoolLimits("after the expiry Job ran", stopped, expiryJobManager)
	}
	d.clock.Store(int64(2 * time.Hour))

	var steps []string
	if err := d.watchSteps(&steps, d.up(ctx)); err != nil {
		d.Fail("pulumi up after the expiry", err)
	}
	for _, s := range steps {
		for urn := range groups {
			if strings.HasSuffix(s, " "+urn) {
				d.t.Errorf("%s: pulumi up after the expiry changed a stopped node group: %s", d.name, s)
			}
		}
	}
	d.checkNodePoolLimits("after the expiry", stopped, expiryJobManager)

	d.expire(ctx, "8h")
	before := len(d.Calls())
	if err := d.watchSteps(new([]string), d.up(ctx)); err != nil {
		d.Fail("pulumi up after extending a fired expiry", err)
	}
	restored := map[string]bool{}
	for _, c := range d.Calls()[before:] {
		if c.Op != "update" || groups[c.URN] == nil {
			continue
		}
		restored[c.URN] = true
		got, _ := c.Inputs["scalingConfig"].(map[string]any)
		if !reflect.DeepEqual(got, groups[c.URN]) {
			d.t.Errorf("%s: extending the expiry restored %s to %v, want %v", d.name, c.URN, got, groups[c.URN])
		}
	}
	for urn := range groups {
		if !restored[urn] {
			d.t.Errorf("%s: extending the expiry did not restore the node group %s", d.name, urn)
		}
	}
	d.setLive(nil) // EKS now reports what the up set
	d.checkNodePoolLimits("after extending the expiry", func(p topology.PoolSpec) string { return fmt.Sprint(p.Scaling.GPULimit) }, pulumiManager)
}

func (d *Deployment) up(ctx context.Context) func(chan<- events.EngineEvent) error {
	return func(ch chan<- events.EngineEvent) error {
		_, err := d.Stack.Up(ctx, optup.EventStreams(ch), optup.ProgressStreams(&d.Log))
		return err
	}
}

// gpuNodeGroups are the stack's GPU node groups (every managed node group but the system one), each
// with the scaling the last create or update gave it.
func (d *Deployment) gpuNodeGroups() map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, c := range d.Calls() {
		if (c.Op == "create" || c.Op == "update") && c.Error == "" && c.Type == "aws:eks/nodeGroup:NodeGroup" && !strings.HasSuffix(c.URN, "-system") {
			out[c.URN], _ = c.Inputs["scalingConfig"].(map[string]any)
		}
	}
	return out
}

// setLive writes what the aws double reports as changed outside Pulumi (nil: nothing).
func (d *Deployment) setLive(changes map[string]any) {
	b, err := json.Marshal(changes)
	if err != nil {
		d.t.Fatal(err)
	}
	if err := os.WriteFile(d.live, b, 0o644); err != nil {
		d.t.Fatal(err)
	}
}

func (d *Deployment) karpenterPools() []topology.PoolSpec {
	var out []topology.PoolSpec
	for _, p := range d.spec.Pools {
		if p.Provisioner == topology.ProvisionerKarpenter {
			out = append(out, p)
		}
	}
	return out
}

// runExpiryJob plays the expiry Job's pod as a kubelet would run it: the containers of the
// CronJob's job template in order, init containers first, each command run here with kubectl
// and the Job's service-account token (so with exactly its RBAC grants, and under kubectl's own
// field manager, as in the cluster). Only the kubelet is a stand-in; the commands are the
// CronJob's, read back from the API server.
func (d *Deployment) runExpiryJob(ctx context.Context) {
	cj, err := d.server.Get(map[string]any{"apiVersion": "batch/v1", "kind": "CronJob",
		"metadata": map[string]any{"name": expiry.JobName, "namespace": k8sargs.Namespace}})
	if err != nil {
		d.t.Fatalf("%s: the expiry's CronJob: %v", d.name, err)
	}
	var pod struct {
		Spec struct {
			JobTemplate struct {
				Spec struct {
					Template struct {
						Spec struct {
							ServiceAccountName string `json:"serviceAccountName"`
							InitContainers     []struct {
								Command []string `json:"command"`
							} `json:"initContainers"`
							Containers []struct {
								Command []string `json:"command"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			} `json:"jobTemplate"`
		} `json:"spec"`
	}
	b, _ := json.Marshal(cj)
	if err := json.Unmarshal(b, &pod); err != nil {
		d.t.Fatal(err)
	}
	spec := pod.Spec.JobTemplate.Spec.Template.Spec
	token, err := d.server.ServiceAccountToken(k8sargs.Namespace, spec.ServiceAccountName)
	if err != nil {
		d.t.Fatal(err)
	}
	kubeconfig, err := d.server.AdminKubeconfig()
	if err != nil {
		d.t.Fatal(err)
	}
	cache := filepath.Join(d.t.TempDir(), "kube-cache")
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if len(c.Command) == 0 || c.Command[0] != "kubectl" {
			d.t.Fatalf("%s: the expiry Job runs %q: only kubectl commands are played here", d.name, c.Command)
		}
		args := []string{"--kubeconfig", kubeconfig, "--token", token}
		for _, a := range c.Command[1:] {
			if strings.HasPrefix(a, "--cache-dir=") {
				a = "--cache-dir=" + cache
			}
			args = append(args, a)
		}
		if out, err := d.Env.Run(ctx, nil, "kubectl", args...); err != nil {
			d.t.Fatalf("%s: the expiry Job's %q: %v\n%s", d.name, c.Command, err, out)
		}
	}
}

// The field managers of a NodePool's GPU limit (metadata.managedFields): kubectl patch's
// default (the expiry Job's `kubectl patch`, an Update), and the prefix of the one
// pulumi-kubernetes applies with (server-side apply).
const (
	expiryJobManager = "kubectl-patch"
	pulumiManager    = "pulumi-kubernetes"
)

// checkNodePoolLimits: every Karpenter pool's NodePool in the cluster has the GPU limit want says,
// and the field manager manager (a name, or the prefix of one) alone owns it. That is what the
// expiry relies on: after the Job, its patch owns the limit (the Job stopped the pool, not an up);
// after the up that extends the expiry, pulumi-kubernetes owns it again and the Job's manager
// owns nothing of it, so the next change of the limit in the stack applies without a
// server-side-apply conflict. A provider or kubectl upgrade that changes either fails here.
func (d *Deployment) checkNodePoolLimits(when string, want func(topology.PoolSpec) string, manager string) {
	for _, p := range d.karpenterPools() {
		np, err := d.server.Get(map[string]any{"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
			"metadata": map[string]any{"name": topology.PoolResourceName(d.spec.Cluster.Name, p.Name)}})
		if err != nil {
			d.t.Errorf("%s: %s: NodePool of pool %s: %v", d.name, when, p.Name, err)
			continue
		}
		spec, _ := np["spec"].(map[string]any)
		limits, _ := spec["limits"].(map[string]any)
		if got := fmt.Sprint(limits[topology.ResourceGPU]); got != want(p) {
			d.t.Errorf("%s: %s: NodePool of pool %s has %s limit %s, want %s", d.name, when, p.Name, topology.ResourceGPU, got, want(p))
		}
		owners := gpuLimitManagers(np)
		d.t.Logf("%s: %s: NodePool of pool %s: %s limit managed by %v", d.name, when, p.Name, topology.ResourceGPU, owners)
		if len(owners) != 1 || !strings.HasPrefix(owners[0], manager) {
			d.t.Errorf("%s: %s: NodePool of pool %s: the %s limit is managed by %v, want %s alone (metadata.managedFields %v)",
				d.name, when, p.Name, topology.ResourceGPU, owners, manager, np["metadata"].(map[string]any)["managedFields"])
		}
	}
}

// gpuLimitManagers are the field managers whose managedFields entry holds
// spec.limits["nvidia.com/gpu"], each as "<manager> (<operation>)".
func gpuLimitManagers(np map[string]any) []string {
	var owners []string
	entries, _ := np["metadata"].(map[string]any)["managedFields"].([]any)
	for _, e := range entries {
		entry, _ := e.(map[string]any)
		fields, _ := entry["fieldsV1"].(map[string]any)
		spec, _ := fields["f:spec"].(map[string]any)
		limits, _ := spec["f:limits"].(map[string]any)
		if _, ok := limits["f:"+topology.ResourceGPU]; ok {
			owners = append(owners, fmt.Sprintf("%v (%v)", entry["manager"], entry["operation"]))
		}
	}
	return owners
}
