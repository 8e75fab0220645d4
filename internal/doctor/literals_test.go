package doctor

import (
	"strings"
	"testing"
)

// FuzzLiteralSetIsContains holds the one-pass literal search to strings.Contains, literal by
// literal, over the message expressions' own literals and every line of the fixtures: a
// literal is found where Contains finds it, and nowhere else.
func FuzzLiteralSetIsContains(f *testing.F) {
	for _, l := range msgLiterals.literals {
		f.Add(l)
		f.Add("x" + l[:len(l)-1])
		f.Add(l + l[1:])
	}
	f.Add("NET/OFI NET/OFI x")
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		holds := msgLiterals.in(s)
		for i, l := range msgLiterals.literals {
			if holds.has(i) != strings.Contains(s, l) {
				t.Fatalf("%q: literal %q found %v, strings.Contains %v", s, l, holds.has(i), !holds.has(i))
			}
		}
	})
}

// FuzzExprIndexIsMayMatch holds the expressions the index lets run on a message to those whose
// gate and keys (or test) the message passes, each found by strings.Contains.
func FuzzExprIndexIsMayMatch(f *testing.F) {
	for _, k := range msgExprs.exprs {
		for _, key := range k.keys {
			f.Add(k.gate + " " + key)
			f.Add(key)
		}
	}
	f.Add("CUDA error 802 'system not yet initialized'")
	addLogLines(f)
	f.Fuzz(func(t *testing.T, s string) {
		run := msgExprs.runs(msgLiterals.in(s), s)
		for i, k := range msgExprs.exprs {
			if got, want := run&(1<<i) != 0, k.mayMatch(s); got != want {
				t.Fatalf("%q: %s runs %v, mayMatch %v", s, k.re, got, want)
			}
		}
	})
}

// TestLiteralSetOfOneByte covers literals of one byte, which no message expression has today.
func TestLiteralSetOfOneByte(t *testing.T) {
	set := newLiteralSet()
	a, ab, again := set.id("a"), set.id("ab"), set.id("a")
	if again != a || set.id("") != -1 {
		t.Fatalf("ids: a %d, again %d, empty %d", a, again, set.id(""))
	}
	for text, want := range map[string][2]bool{"": {}, "xa": {true, false}, "xab": {true, true}, "b": {}} {
		got := set.in(text)
		if got.has(a) != want[0] || got.has(ab) != want[1] {
			t.Errorf("%q: a %v ab %v, want %v", text, got.has(a), got.has(ab), want)
		}
	}
}
