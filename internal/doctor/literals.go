package doctor

import (
	"math/bits"
	"strings"
)

// literalSet finds, in one pass over a text, which of a fixed set of literal strings it holds:
// the message expressions' gates and keys, which were one substring search each (a message is
// read against dozens). Every position's first two bytes pick the literals that can start
// there from a small table, and its third byte must be one of theirs; only those are compared.
// The answer is exactly strings.Contains's for each literal (FuzzLiteralSetIsContains).
type literalSet struct {
	literals []string
	// starting holds, per hash of two bytes, the literals whose first two bytes hash there.
	starting [1 << 12]literalBits
	// maybe marks the hashes starting holds any literal at: a byte each, so that a position
	// where no literal starts (almost every one) costs one small load.
	maybe [1 << 12]bool
	// thirds holds, per hash of two bytes, the third bytes of the literals starting there, a
	// bit each (every bit for a literal of two bytes): a word's first two letters are common
	// ("comm" against "coll channels"), and a compare costs a call.
	thirds [1 << 12][4]uint64
	// short are the literals of one byte, looked for with IndexByte.
	short literalBits
}

// literalBits is a set of literals by their index.
type literalBits [2]uint64

const maxLiterals = len(literalBits{}) * 64

func (b *literalBits) add(i int)     { b[i/64] |= 1 << (i % 64) }
func (b literalBits) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

func pairHash(a, b byte) int { return (int(a)<<4 ^ int(b)) & (1<<12 - 1) }

// newLiteralSet is an empty set; id adds to it.
func newLiteralSet() *literalSet { return &literalSet{} }

// id is literal's index in the set, added if new. An empty literal has none (-1): every text
// holds it.
func (s *literalSet) id(literal string) int {
	if literal == "" {
		return -1
	}
	for i, l := range s.literals {
		if l == literal {
			return i
		}
	}
	i := len(s.literals)
	if i == maxLiterals {
		panic("literalSet: more than maxLiterals literals; widen literalBits")
	}
	s.literals = append(s.literals, literal)
	if len(literal) == 1 {
		s.short.add(i)
	} else {
		h := pairHash(literal[0], literal[1])
		s.starting[h].add(i)
		s.maybe[h] = true
		if len(literal) == 2 {
			s.thirds[h] = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
		} else {
			s.thirds[h][literal[2]/64] |= 1 << (literal[2] % 64)
		}
	}
	return i
}

// in is the set of literals text holds.
func (s *literalSet) in(text string) literalBits {
	var found literalBits
	if len(text) >= 2 {
		// Each byte is loaded once, carried as the next position's first.
		prev := text[0]
		for i := 1; i < len(text); i++ {
			cur := text[i]
			h := pairHash(prev, cur)
			prev = cur
			// A third byte not of the literals starting here (or none: the text ends) rules
			// them all out. A literal of two bytes set every bit; at the text's end it is
			// compared.
			if !s.maybe[h] || i+1 < len(text) && s.thirds[h][text[i+1]/64]&(1<<(text[i+1]%64)) == 0 {
				continue
			}
			for w, word := range s.starting[h] {
				for ; word != 0; word &= word - 1 {
					if j := w*64 + bits.TrailingZeros64(word); !found.has(j) && strings.HasPrefix(text[i-1:], s.literals[j]) {
						found.add(j)
					}
				}
			}
		}
	}
	for w, word := range s.short {
		for word != 0 {
			j := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if strings.IndexByte(text, s.literals[j][0]) >= 0 {
				found.add(j)
			}
		}
	}
	return found
}
