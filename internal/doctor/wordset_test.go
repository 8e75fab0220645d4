package doctor

import (
	"math/rand/v2"
	"testing"
)

// TestWordSetIsAMap: over many random words, repeated and not, the zero word and words that
// differ only in their high or low bits (a connection's channel, its ranks), the set answers
// every add as a map does and holds what the map holds.
func TestWordSetIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	var s wordSet
	want := map[uint64]bool{}
	for i := range 200000 {
		var w uint64
		switch rng.IntN(4) {
		case 0:
			w = rng.Uint64()
		case 1:
			w = uint64(rng.IntN(64))<<48 | uint64(rng.IntN(512))<<24 | uint64(rng.IntN(512))
		case 2:
			w = uint64(rng.IntN(8)) << 60
		default:
			w = uint64(rng.IntN(16))
		}
		if got := s.add(w); got != !want[w] {
			t.Fatalf("add %d (#%d): new %v, the map says %v", w, i, got, !want[w])
		}
		want[w] = true
	}
	held := map[uint64]bool{}
	s.each(func(w uint64) {
		if held[w] {
			t.Fatalf("%d held twice", w)
		}
		held[w] = true
	})
	if len(held) != len(want) {
		t.Fatalf("the set holds %d words, the map %d", len(held), len(want))
	}
	for w := range want {
		if !held[w] {
			t.Fatalf("%d is in the map, not in the set", w)
		}
	}
}
