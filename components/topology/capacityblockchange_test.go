package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mixedStack is a running stack's file: a Capacity Block pool (train, line 5 on) beside a range pool.
const mixedStack = `config:
  aws:region: us-east-1
  gpucluster:availabilityZones: [us-east-1a, us-east-1b]
  gpucluster:pools:
    - name: train
      profile: p5-efa
      nodes: 4
      availabilityZones: [us-east-1a]
      capacity: capacity-block
      capacityReservationId: cr-0fedcba9876543210
    - name: infer
      profile: g6e-efa
      minNodes: 0
      maxNodes: 3
`

func loadText(t *testing.T, text string) StackSpec {
	t.Helper()
	path := filepath.Join(t.TempDir(), "Pulumi.mixed.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := LoadStack(path, planDay)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestACapacityBlockPoolChangesItsTemplateOnlyAtZero: the previous up ran train at 4 nodes with
// reservation cr-0123456789abcdef0 (template digest "a"). A new reservation or any other template
// change is refused at the line that made it, with the steps to take; at desired 0, on the first
// up, or with the template unchanged, the up goes ahead.
func TestACapacityBlockPoolChangesItsTemplateOnlyAtZero(t *testing.T) {
	spec := loadText(t, mixedStack)
	running := map[string]DeployedPool{"train": {LaunchTemplate: "a", ReservationID: "cr-0123456789abcdef0", DesiredNodes: 4}}
	newReservation := map[string]DeployedPool{"train": {LaunchTemplate: "b", ReservationID: "cr-0fedcba9876543210", DesiredNodes: 4}}
	newImage := map[string]DeployedPool{"train": {LaunchTemplate: "b", ReservationID: "cr-0123456789abcdef0", DesiredNodes: 4}}

	err := CapacityBlockChangeProblem(spec, running, newReservation)
	var ces ConfigErrors
	if !errors.As(err, &ces) || len(ces) != 1 {
		t.Fatalf("a new reservation for a running Capacity Block pool: %v, want one ConfigError", err)
	}
	e := ces[0]
	if e.File != spec.Source || e.Line != 10 || e.Key != "gpucluster:pools[0].capacityReservationId" {
		t.Errorf("refusal placed at %s:%d key %s, want line 10, gpucluster:pools[0].capacityReservationId", e.File, e.Line, e.Key)
	}
	for _, want := range []string{"pool train runs 4 node(s)", "cr-0123456789abcdef0 → cr-0fedcba9876543210", "desired size to 0"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("message %q lacks %q", e.Message, want)
		}
	}
	if !strings.Contains(e.Fix, "add stopped: true to pool train") || !strings.Contains(e.Fix, "then make the change") {
		t.Errorf("fix %q does not give the steps", e.Fix)
	}

	err = CapacityBlockChangeProblem(spec, running, newImage)
	if !errors.As(err, &ces) || len(ces) != 1 || ces[0].Key != "gpucluster:pools[0]" || ces[0].Line != 5 {
		t.Errorf("another template change of the running pool: %v, want the pool's line 5", err)
	}

	stopped := map[string]DeployedPool{"train": {LaunchTemplate: "a", ReservationID: "cr-0123456789abcdef0", DesiredNodes: 0}}
	for what, deployed := range map[string]map[string]DeployedPool{"at desired 0": stopped, "on the first up": nil} {
		if err := CapacityBlockChangeProblem(spec, deployed, newReservation); err != nil {
			t.Errorf("a new reservation %s: %v", what, err)
		}
	}
	if err := CapacityBlockChangeProblem(spec, running, running); err != nil {
		t.Errorf("an unchanged template: %v", err)
	}
}

// TestAStoppedPoolIsAtZeroWithEverythingElseKept: stopped: true takes a pool to minimum, desired
// and GPU limit 0, keeps its maximum, its benchmark and its ComputeDomain as they were, and says so.
func TestAStoppedPoolIsAtZeroWithEverythingElseKept(t *testing.T) {
	benchmarked := strings.Replace(mixedStack, "  gpucluster:pools:\n", "  gpucluster:benchmarks: {enabled: true}\n  gpucluster:pools:\n", 1)
	running := loadText(t, benchmarked)
	stopped := loadText(t, strings.Replace(benchmarked, "      nodes: 4\n", "      nodes: 4\n      stopped: true\n", 1))
	was, now := running.Pools[0], stopped.Pools[0]
	if now.Benchmark == nil || was.Benchmark == nil || now.Benchmark.Nodes != 4 || now.Benchmark.NCCL.Workers != was.Benchmark.NCCL.Workers {
		t.Errorf("stopped pool's benchmark %+v, want the running pool's (4 nodes): %+v", now.Benchmark, was.Benchmark)
	}
	if now.Scaling != (Scaling{MinNodes: 0, MaxNodes: 4, DesiredNodes: 0, GPULimit: 0}) {
		t.Errorf("stopped pool's scaling %+v, want 0 min, 4 max, 0 desired, 0 GPU limit", now.Scaling)
	}
	if len(now.Findings) != len(was.Findings)+1 || now.Findings[len(now.Findings)-1].Code != FindingStopped {
		t.Errorf("stopped pool's findings %+v, want the running pool's and %s", now.Findings, FindingStopped)
	}
	if now.Capacity != was.Capacity || now.Network.EFAInterfaces != was.Network.EFAInterfaces {
		t.Errorf("stopping the pool changed more than its size: %+v / %+v", now.Capacity, was.Capacity)
	}
	if stopped.Pools[1].Scaling != running.Pools[1].Scaling {
		t.Errorf("stopping train changed infer's scaling: %+v", stopped.Pools[1].Scaling)
	}
	if errs := parseErrors(t, strings.Replace(mixedStack, "      nodes: 4\n", "      nodes: 4\n      stopped: yes please\n", 1)); len(errs) != 1 ||
		errs[0].Line != 8 || errs[0].Key != "gpucluster:pools[0].stopped" {
		t.Errorf("stopped: yes please: %v, want one error at line 8, gpucluster:pools[0].stopped", errs)
	}
}
