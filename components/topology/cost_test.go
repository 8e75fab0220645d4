package topology

import (
	"math"
	"strings"
	"testing"
)

// The dev stack worked by hand: control plane 0.10 + NAT 0.045 + 2 × m7i.large 0.1008 + volumes
// (2 × 50 GiB + 1 × 200 GiB of gp3 at 0.08 per GB-month over 730 hours) + 1 × g6e.xlarge 1.861.
func TestEstimateCostByHand(t *testing.T) {
	spec, err := ParseStack("dev.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:pools: [{name: gpu, profile: dev}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DeriveStack(spec)
	if err != nil {
		t.Fatal(err)
	}
	c := EstimateCost(s)
	want := 0.10 + 0.045 + 2*0.1008 + (2*50+200)*0.08/730 + 1.861
	if math.Abs(c.AtDeploy-want) > 1e-9 || math.Abs(c.AtMost-want) > 1e-9 || !c.Complete || len(c.Lines) != 5 {
		t.Errorf("cost %+v, want %.6f", c, want)
	}
}

// Reserved capacity is listed apart and never in the hourly totals; spot is priced at its ceiling.
func TestReservedCapacityIsNotAnHourlyCost(t *testing.T) {
	data := "config:\n  aws:region: us-east-1\n  gpucluster:pools:\n    - {name: train, profile: p5-efa, nodes: 4, capacity: capacity-block, capacityReservationId: cr-0123456789abcdef0}\n"
	st, err := ParseStack("r.yaml", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := DeriveStack(st)
	c := EstimateCost(s)
	if len(c.Reserved) != 1 || c.Reserved[0].Pool != "train" || !strings.Contains(c.Reserved[0].Note, "billed by the reservation") || c.AtMost > 1 {
		t.Errorf("reserved %+v, total at most %.2f", c.Reserved, c.AtMost)
	}
}

// Within the guard the stack passes; a pool the guard cannot price is a warning naming it.
func TestCostGuardWithinAndUnpriced(t *testing.T) {
	st, err := ParseStack("g.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:maxHourlyCost: 3\n  gpucluster:pools: [{name: gpu, profile: dev}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := DeriveStack(st); err != nil || s.MaxHourlyCost != 3 {
		t.Errorf("dev under a $3 guard: %v", err)
	}
	st, _ = ParseStack("g.yaml", []byte("config:\n  aws:region: us-east-1\n  gpucluster:maxHourlyCost: 1000\n  gpucluster:pools: [{name: gpu, profile: p5-efa, instanceType: p5e.48xlarge}]\n"))
	s, err := DeriveStack(st)
	if err != nil || len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0].Message, "cannot price") {
		t.Errorf("p5e (no on-demand price): %v %v", err, s.Warnings)
	}
}
