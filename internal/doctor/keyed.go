package doctor

import (
	"math/bits"
	"regexp"
	"strings"
)

// keyedRe is a regular expression behind text every match of it holds. A log's lines almost
// never hold that text, and a substring test is a hundred times cheaper than running the
// expression (which backtracks from every position when it starts with no literal): the
// expression stays the definition, and runs only on the few lines that could match.
// FuzzKeysAreNecessary holds each key set to its expression: whatever matches passes the test.
type keyedRe struct {
	re *regexp.Regexp
	// prefix is the literal text every match starts with (regexp's LiteralPrefix): the
	// expression runs from its first occurrence, not over the whole line (the backtracker's
	// cost grows with its input's length).
	prefix string
	gate   string            // text every match holds, shared with other expressions ("" if none)
	keys   []string          // every match holds one of these, as written
	may    func(string) bool // or passes this test, when no literal is common to every match
	// hand reads the expression's submatches by hand, where the expression is among the most
	// frequent of a log (nil: the expression runs).
	hand func(string) []string
	// keyIDs are keys' indexes in msgLiterals, for an expression that reads messages.
	keyIDs []int
}

// keyedExprs are every keyed expression, for the fuzz test.
var keyedExprs []*keyedRe

// keyed compiles expr behind keys: literal text, one of which every match holds.
func keyed(expr string, keys ...string) *keyedRe {
	k := &keyedRe{re: regexp.MustCompile(expr), keys: keys}
	k.prefix, _ = k.re.LiteralPrefix()
	keyedExprs = append(keyedExprs, k)
	return k
}

// gated compiles expr behind a gate shared with other expressions (a line without "NET/OFI" is
// none of aws-ofi-nccl's announcements: one test decides for them all) and its own keys.
func gated(gate, expr string, keys ...string) *keyedRe {
	k := keyed(expr, keys...)
	k.gate = gate
	return k
}

// byHand has k read by a hand-written reader, held to the expression by the fuzz tests.
func (k *keyedRe) byHand(read func(string) []string) *keyedRe {
	k.hand = read
	return k
}

// keyedBy compiles expr behind a hand-written test every match passes.
func keyedBy(expr string, may func(string) bool) *keyedRe {
	k := &keyedRe{re: regexp.MustCompile(expr), may: may}
	k.prefix, _ = k.re.LiteralPrefix()
	keyedExprs = append(keyedExprs, k)
	return k
}

func (k *keyedRe) mayMatch(s string) bool {
	return (k.gate == "" || strings.Contains(s, k.gate)) && k.mayPassKeys(s)
}

// mayPassKeys is mayMatch once the gate is passed.
func (k *keyedRe) mayPassKeys(s string) bool {
	if k.may != nil {
		return k.may(s)
	}
	for _, key := range k.keys {
		if strings.Contains(s, key) {
			return true
		}
	}
	return false
}

// find is the expression's submatches, nil where s cannot match.
func (k *keyedRe) find(s string) []string {
	if !k.mayMatch(s) {
		return nil
	}
	return k.submatches(s)
}

// submatches runs the expression from where a match can start. No match starts before the
// prefix's first occurrence, and nothing before a match is read: an expression that starts with
// a literal has no assertion (\b, ^) ahead of it.
func (k *keyedRe) submatches(s string) []string {
	if k.hand != nil {
		return k.hand(s)
	}
	if k.prefix != "" {
		i := strings.Index(s, k.prefix)
		if i < 0 {
			return nil
		}
		s = s[i:]
	}
	return k.re.FindStringSubmatch(s)
}

// gateGroup is expressions behind one gate.
type gateGroup struct {
	gate   string
	gateID int // the gate's index in msgLiterals (-1: none)
	exprs  []*keyedRe
}

// exprIndex is the message expressions (onMsg's, in its order) by the literals that gate and
// key them: which may run on a message follows from the literals it holds, a few, instead of
// asking each expression in turn (dozens, most behind no gate).
type exprIndex struct {
	exprs   []*keyedRe
	keyedBy [maxLiterals]uint64 // per literal, the expressions it is a key of
	gatedBy [maxLiterals]uint64 // per literal, the expressions it gates
	ungated uint64              // the expressions behind no gate
	tested  uint64              // those that pass a test (may) instead of keys
}

// indexExprs indexes groups, whose gates and keys indexLiterals numbered.
func indexExprs(groups []gateGroup) *exprIndex {
	x := &exprIndex{}
	for _, g := range groups {
		for _, k := range g.exprs {
			i := len(x.exprs)
			if i == 64 {
				panic("indexExprs: more than 64 message expressions; widen exprIndex's sets")
			}
			x.exprs = append(x.exprs, k)
			bit := uint64(1) << i
			if g.gateID < 0 {
				x.ungated |= bit
			} else {
				x.gatedBy[g.gateID] |= bit
			}
			if k.may != nil {
				x.tested |= bit
				continue
			}
			for _, id := range k.keyIDs {
				x.keyedBy[id] |= bit
			}
		}
	}
	return x
}

// runs is the set of expressions (bits of exprs) that may match msg, which holds the literals
// holds: each behind no gate or a gate msg holds, and holding a key of its own or passing its
// test: mayMatch's answer, from the literals (FuzzExprIndexIsMayMatch).
func (x *exprIndex) runs(holds literalBits, msg string) uint64 {
	keyed, open := uint64(0), x.ungated
	for w, word := range holds {
		for ; word != 0; word &= word - 1 {
			j := w*64 + bits.TrailingZeros64(word)
			keyed |= x.keyedBy[j]
			open |= x.gatedBy[j]
		}
	}
	run := keyed & open
	for t := x.tested & open; t != 0; t &= t - 1 {
		if i := bits.TrailingZeros64(t); x.exprs[i].may(msg) {
			run |= 1 << i
		}
	}
	return run
}

// byGate groups expressions by their gate, in their order ("" first: no gate).
func byGate(exprs []*keyedRe) []gateGroup {
	var out []gateGroup
	at := map[string]int{}
	for _, k := range exprs {
		i, ok := at[k.gate]
		if !ok {
			i = len(out)
			at[k.gate] = i
			out = append(out, gateGroup{gate: k.gate})
		}
		out[i].exprs = append(out[i].exprs, k)
	}
	return out
}

// mayBeCUDAError is what every match of cudaErrorRe passes: its case-insensitive "cuda " before
// error|failure, or " not yet initialized" (whose letters fold only to ASCII; "system"'s s
// also folds to U+017F, so the test starts after it). Every message is asked: the spaces are
// found eight bytes at a time (a byte is a space where x^0x20 is zero), and the words around a
// space compared only where the byte before it is an 'a' or the two after it "no" (a
// communicator's line has four words starting with 'n').
func mayBeCUDAError(s string) bool {
	at := func(i int) bool {
		return i >= 4 && s[i-1]|0x20 == 'a' && asciiFoldEqual(s[i-4:i], "cuda") ||
			i+2 < len(s) && s[i+1]|0x20 == 'n' && s[i+2]|0x20 == 'o' && asciiFoldHasPrefix(s[i:], " not yet initialized")
	}
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// Each space marked is checked on its byte (a mark may be false above a true one).
		for m := bytesAre(x, ' '); m != 0; m &= m - 1 {
			if j := i + bits.TrailingZeros64(m)/8; s[j] == ' ' && at(j) {
				return true
			}
		}
	}
	for ; i < len(s); i++ {
		if s[i] == ' ' && at(i) {
			return true
		}
	}
	return false
}

// asciiFoldEqual compares s with lower, a lowercase ASCII word, ignoring ASCII case.
func asciiFoldEqual(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func asciiFoldHasPrefix(s, lower string) bool {
	return len(s) >= len(lower) && asciiFoldEqual(s[:len(lower)], lower)
}
