package topology

import (
	"slices"
	"testing"

	"github.com/gpucluster/gpucluster/components/topology/catalog"
)

// TestEFALayoutFollowsEachTypesCards: the EFA interfaces go where each type takes them. p6-b300's
// card 0 is ENA only, so its 16 EFA sit on cards 1-16 [efa-b300]; p6e-gb200 takes EFA-only on its
// odd cards, one NIC per GPU first (1, 5, 9, 13) [efa-p6e]; p5 fills card 0 (device 1) and on.
func TestEFALayoutFollowsEachTypesCards(t *testing.T) {
	for _, c := range []struct {
		typ       string
		efa       int
		wantCards []int
	}{
		{"p5.48xlarge", 2, []int{0, 1}},
		{"p6-b300.48xlarge", 16, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{"p6e-gb200.36xlarge", 4, []int{1, 5, 9, 13}},
		{"p6e-gb200.36xlarge", 8, []int{1, 5, 9, 13, 3, 7, 11, 15}},
		{"g7e.48xlarge", 4, []int{0, 1, 2, 3}},
	} {
		it, _ := catalog.Lookup(c.typ)
		nics, err := networkInterfaces(it, c.efa)
		if err != nil {
			t.Fatalf("%s: %v", c.typ, err)
		}
		if nics[0] != (NetworkInterface{0, 0, InterfaceENA, false, true}) {
			t.Errorf("%s: primary %+v", c.typ, nics[0])
		}
		var cards []int
		for _, n := range nics[1:] {
			cards = append(cards, n.NetworkCardIndex)
			wantDevice := 0
			if n.NetworkCardIndex == 0 {
				wantDevice = 1
			}
			if n.InterfaceType != InterfaceEFAOnly || n.DeviceIndex != wantDevice {
				t.Errorf("%s: EFA interface %+v", c.typ, n)
			}
		}
		if !slices.Equal(cards, c.wantCards) {
			t.Errorf("%s with %d EFA: cards %v, want %v", c.typ, c.efa, cards, c.wantCards)
		}
	}
}
