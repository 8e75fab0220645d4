package topology

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDerive measures one pool derivation of the largest built-in (p5: 33 interfaces).
func BenchmarkDerive(b *testing.B) {
	p, _ := BuiltinProfile("p5-efa")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Derive("p5", p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseAndDeriveStack measures a whole stack file of 1 and 64 pools, parse to spec,
// so that growth in pools is visible (ns/op divided by pools is the per-pool cost).
func BenchmarkParseAndDeriveStack(b *testing.B) {
	for _, pools := range []int{1, 64} {
		var sb strings.Builder
		sb.WriteString("config:\n  aws:region: us-east-1\n  gpucluster:pools:\n")
		profiles := BuiltinProfileNames()
		for i := 0; i < pools; i++ {
			fmt.Fprintf(&sb, "    - name: pool-%d\n      profile: %s\n      labels: {team: t%d}\n", i, profiles[i%len(profiles)], i)
		}
		data := []byte(sb.String())
		b.Run(fmt.Sprintf("pools=%d", pools), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				st, err := ParseStack("bench.yaml", data)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := DeriveStack(st, planDay); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
