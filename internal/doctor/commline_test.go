package doctor

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzExactInitLineIsReadMessage holds the Init line's shortcut to the whole reading of its
// message: where exactInitLine reads a message (one built from the fuzzer's fields, in every
// form it takes, or any text), the message matches commRe alone, with those submatches, and
// holds initLineLiterals; and it reads every message built in its form.
func FuzzExactInitLineIsReadMessage(f *testing.F) {
	f.Add("55d0c0050", uint16(5), uint16(16), uint8(5), uint8(5), "601c0", "", "6c3f1a2b9d8e7f01", uint8(0), "")
	f.Add("a", uint16(0), uint16(1), uint8(0), uint8(0), "", "7f", "", uint8(3), "")
	f.Add("1", uint16(1), uint16(2), uint8(1), uint8(0), "", "", "", uint8(1), "comm 0x1 rank 1 nranks 2 cudaDev 1 x - Init START")
	f.Add("1", uint16(1), uint16(2), uint8(1), uint8(0), "", "", "", uint8(1), "comm 0x1 rank 1 nranks 2 cudaDev 1 - Init COMPLETE NVLS")
	f.Fuzz(func(t *testing.T, comm string, rank, nranks uint16, dev, opts uint8, busID, parent, commID string, state uint8, text string) {
		hex := func(s string) string { // lowercase hex digits of s, one at least
			var b strings.Builder
			for _, c := range []byte(s) {
				b.WriteByte("0123456789abcdef"[c%16])
			}
			if b.Len() == 0 {
				return "0"
			}
			return b.String()
		}
		built := fmt.Sprintf("comm 0x%s rank %d nranks %d cudaDev %d", hex(comm), rank, nranks, dev)
		if opts&1 != 0 {
			built += fmt.Sprintf(" nvmlDev %d", dev)
		}
		if opts&2 != 0 {
			built += " busId " + hex(busID)
		}
		if opts&4 != 0 {
			built += " parent 0x" + hex(parent)
		}
		if opts&8 != 0 {
			built += " commId 0x" + hex(commID)
		}
		built += " - Init " + [2]string{"START", "COMPLETE"}[state%2]
		if exactInitLine(built) == nil {
			t.Fatalf("%q: not read as an Init line", built)
		}
		for _, msg := range []string{built, text} {
			m := exactInitLine(msg)
			if m == nil {
				continue
			}
			var rd reading
			hits, holds := rd.matchMessage(msg)
			if len(hits) != 1 || hits[0].re != commRe || !slices.Equal(hits[0].m, m) || holds != initLineLiterals {
				t.Fatalf("%q: read as an Init line %q holding %v; whole, %v holding %v", msg, m, initLineLiterals, hits, holds)
			}
		}
	})
}

// FuzzExactShapeLineIsReadMessage holds the shape line's shortcut to the whole reading of its
// message, as FuzzExactInitLineIsReadMessage does the Init line's.
func FuzzExactShapeLineIsReadMessage(f *testing.F) {
	f.Add("55d0c0000", uint16(0), uint16(16), uint8(2), uint8(8), uint8(0), uint8(0), "")
	f.Add("a", uint16(1), uint16(72), uint8(1), uint8(72), uint8(1), uint8(1), "comm 0x1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 12")
	f.Add("a", uint16(1), uint16(72), uint8(1), uint8(72), uint8(1), uint8(1), "comm 0x1 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1")
	f.Fuzz(func(t *testing.T, comm string, rank, nranks uint16, nodes, local, localRank, mnnvl uint8, text string) {
		var hex strings.Builder
		for _, c := range []byte(comm) {
			hex.WriteByte("0123456789abcdef"[c%16])
		}
		if hex.Len() == 0 {
			hex.WriteByte('0')
		}
		built := fmt.Sprintf("comm 0x%s rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d", hex.String(), rank, nranks, nodes, local, localRank, mnnvl%10)
		if m, _ := exactShapeLine(built); m == nil {
			t.Fatalf("%q: not read as a shape line", built)
		}
		for _, msg := range []string{built, text} {
			nodes, mnnvl := exactShapeLine(msg)
			if nodes == nil {
				continue
			}
			var rd reading
			hits, holds := rd.matchMessage(msg)
			want := []hit{{nodesRe, nodes}, {commMNNVLRe, mnnvl}}
			if !nodesFirst {
				want[0], want[1] = want[1], want[0]
			}
			if !reflect.DeepEqual(hits, want) || holds != shapeLineLiterals {
				t.Fatalf("%q: read as a shape line %v holding %v; whole, %v holding %v", msg, want, shapeLineLiterals, hits, holds)
			}
		}
	})
}
