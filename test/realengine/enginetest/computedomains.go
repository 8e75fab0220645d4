package enginetest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gpucluster/gpucluster/components/topology"
)

// computeDomainFinalizer is what the NVIDIA DRA driver's ComputeDomain controller puts on each
// ComputeDomain and on every object it makes for one, and removes only once they are deleted
// (cmd/compute-domain-controller/computedomain.go, computeDomainFinalizer, v0.4.1).
const computeDomainFinalizer = "resource.nvidia.com/computeDomain"

// checkComputeDomains: the DRA driver's controller, running in the cluster from the chart the
// stack deployed, has taken each pool's ComputeDomain (its finalizer) and made the claim template
// the pool's pods name, for the DeviceClass Kueue's configuration maps to the IMEX channel, bound
// to that domain. On EKS that is the step between `up` and a job that can start.
func (d *Deployment) checkComputeDomains(ctx context.Context) {
	for _, p := range d.spec.Pools {
		if p.TrainingPod.ComputeDomain == nil || !d.spec.Benchmarks.Enabled {
			continue
		}
		cd := *p.TrainingPod.ComputeDomain
		var last error
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if last = d.computeDomainTaken(cd); last == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				d.t.Errorf("%s: pool %s: the DRA driver's controller did not take ComputeDomain %s in 2 minutes: %v\n%s",
					d.name, p.Name, cd.Name, last, d.server.PodLogs())
				break
			}
			time.Sleep(time.Second)
		}
	}
}

// computeDomainTaken says what the controller has not done yet for a ComputeDomain, or nil.
func (d *Deployment) computeDomainTaken(cd topology.ComputeDomainSpec) error {
	obj, err := d.server.Get(map[string]any{"apiVersion": topology.ComputeDomainAPIVersion, "kind": topology.ComputeDomainKind,
		"metadata": map[string]any{"name": cd.Name, "namespace": topology.BenchmarkNamespace}})
	if err != nil {
		return err
	}
	md, _ := obj["metadata"].(map[string]any)
	if !hasFinalizer(md) {
		return fmt.Errorf("no finalizer %s on the ComputeDomain (it has %v)", computeDomainFinalizer, md["finalizers"])
	}
	tmpl, err := d.server.Get(map[string]any{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
		"metadata": map[string]any{"name": cd.ClaimTemplate, "namespace": topology.BenchmarkNamespace}})
	if err != nil {
		return fmt.Errorf("its claim template: %w", err)
	}
	if !hasFinalizer(tmpl["metadata"].(map[string]any)) {
		return fmt.Errorf("claim template %s was not made by the controller (no finalizer %s)", cd.ClaimTemplate, computeDomainFinalizer)
	}
	spec, _ := dig(tmpl, "spec", "spec", "devices").(map[string]any)
	requests, _ := spec["requests"].([]any)
	configs, _ := spec["config"].([]any)
	if len(requests) != 1 || len(configs) != 1 {
		return fmt.Errorf("claim template %s: want one request and one config, have %v", cd.ClaimTemplate, spec)
	}
	if class := dig(requests[0], "exactly", "deviceClassName"); class != topology.ComputeDomainChannelDeviceClass {
		return fmt.Errorf("claim template %s asks for DeviceClass %v; Kueue's configuration maps %s", cd.ClaimTemplate, class, topology.ComputeDomainChannelDeviceClass)
	}
	if id := dig(configs[0], "opaque", "parameters", "domainID"); id != md["uid"] {
		return fmt.Errorf("claim template %s is for domain %v, the ComputeDomain's UID is %v", cd.ClaimTemplate, id, md["uid"])
	}
	return nil
}

func hasFinalizer(md map[string]any) bool {
	fs, _ := md["finalizers"].([]any)
	return slices.Contains(fs, any(computeDomainFinalizer))
}

// dig follows keys through nested maps; nil where one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
