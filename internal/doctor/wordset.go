package doctor

import "math/bits"

// wordSet is a set of 64-bit words: the connections a communicator has counted
// (Comm.firstSeen), asked once per connection line. Open addressing over a power-of-two table
// at most half full: an answer is a multiplication and, nearly always, one probe, where the
// runtime's map cost twice as much.
type wordSet struct {
	slots []uint64 // 0 is an empty slot: the word 0 is kept apart, in zero
	shift uint     // 64 - log2(len(slots))
	n     int      // words in slots
	zero  bool
}

// add adds w and says whether it is new.
func (s *wordSet) add(w uint64) bool {
	if w == 0 {
		added := !s.zero
		s.zero = true
		return added
	}
	if 2*(s.n+1) > len(s.slots) {
		s.grow()
	}
	mask := uint64(len(s.slots) - 1)
	for i := s.slot(w); ; i = (i + 1) & mask {
		switch s.slots[i] {
		case w:
			return false
		case 0:
			s.slots[i] = w
			s.n++
			return true
		}
	}
}

// slot is where w's probe starts: the top bits of w times the golden ratio, which spread
// words that differ in any bits (a connection's channel and ranks are small numbers).
func (s *wordSet) slot(w uint64) uint64 { return (w * 0x9E3779B97F4A7C15) >> s.shift }

// grow doubles the table (a first one holds 32 words) and places every word again.
func (s *wordSet) grow() {
	old := s.slots
	size := max(64, 2*len(old))
	s.slots, s.shift, s.n = make([]uint64, size), uint(64-bits.TrailingZeros(uint(size))), 0
	for _, w := range old {
		if w != 0 {
			s.add(w)
		}
	}
}

// each calls f with every word of the set.
func (s *wordSet) each(f func(uint64)) {
	if s.zero {
		f(0)
	}
	for _, w := range s.slots {
		if w != 0 {
			f(w)
		}
	}
}
