package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology"
)

// BenchmarkPlanLargestStack plans the stack with the most resources (karpenter-p5: 68), bundle in memory.
func BenchmarkPlanLargestStack(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Evaluate(stack("karpenter-p5"), testDay, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanPools plans synthetic stacks of 1, 16 and 64 pools (every built-in profile in
// turn), to show the cost per pool and that it grows linearly.
func BenchmarkPlanPools(b *testing.B) {
	for _, pools := range []int{1, 16, 64} {
		file := syntheticStack(b, pools)
		b.Run(fmt.Sprintf("pools=%d", pools), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := Evaluate(file, testDay, nil)
				if err != nil {
					b.Fatal(err)
				}
				if len(r.Spec.Pools) != pools {
					b.Fatalf("%d pools", len(r.Spec.Pools))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pools), "ns/pool")
		})
	}
}

func syntheticStack(b *testing.B, pools int) string {
	var sb strings.Builder
	sb.WriteString("config:\n  aws:region: us-east-1\n  gpucluster:pools:\n")
	profiles := topology.BuiltinProfileNames()
	for i := 0; i < pools; i++ {
		name := profiles[i%len(profiles)]
		// A profile on reserved capacity (gb200-nvl72: a Capacity Block) names its reservation
		// in the stack, as a user's would.
		reservation := ""
		if p, _ := topology.BuiltinProfile(name); p.Capacity.Reserved() && p.CapacityReservationID == "" {
			reservation = fmt.Sprintf(", capacityReservationId: cr-%017d", i)
		}
		fmt.Fprintf(&sb, "    - {name: pool-%d, profile: %s%s}\n", i, name, reservation)
	}
	file := filepath.Join(b.TempDir(), fmt.Sprintf("Pulumi.synthetic-%d.yaml", pools))
	if err := os.WriteFile(file, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return file
}
