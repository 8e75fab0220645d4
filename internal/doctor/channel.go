package doctor

import (
	"encoding/binary"
	"strings"
	"unsafe"
)

// parseChannel reads what channelRe matches, by hand: a connection line is most of a log, and
// the expression's backtracking was the largest cost left after the prefix. It returns the
// channel, the two ranks and the transport ("via …", trailing space trimmed), from the leftmost
// "Channel " or "Ring " that starts a whole match. FuzzChannelMatchesRegexp holds it to channelRe.
func parseChannel(s string) (channel, from, to string, via string, ok bool) {
	for i := 0; i < len(s); {
		c := strings.Index(s[i:], "Channel ")
		r := strings.Index(s[i:], "Ring ")
		var at, skip int
		switch {
		case c < 0 && r < 0:
			return "", "", "", "", false
		case r < 0 || (c >= 0 && c < r):
			at, skip = i+c, len("Channel ")
		default:
			at, skip = i+r, len("Ring ")
		}
		if ch, f, t, v, _, ok := channelAfter(s[at+skip:]); ok {
			return ch, f, t, v, true
		}
		i = at + 1
	}
	return "", "", "", "", false
}

// channelAfter parses `N[/M] : A[[hex]] -> B[[hex]][ [send|receive]] via T` at the start of s,
// and says whether s holds " [receive] via " (the receiver logged it): in its tag, or in the
// transport, as what comes before the transport holds no other "via". s is (part of) one line:
// it holds no newline, which channelRe's "." would not cross. FuzzChannelMatchesRegexp holds it
// (through parseChannel) to channelRe.
func channelAfter(s string) (channel, from, to, via string, recv, ok bool) {
	var c connectionText
	if !c.read(s) {
		return "", "", "", "", false, false
	}
	return s[:c.chEnd], s[c.fromAt:c.fromEnd], s[c.toAt:c.toEnd], c.via, c.recv, true
}

// connectionText is what read finds of a connection: its numbers, where the channel ends and
// the two ranks lie, its transport and whether the receiver logged it.
type connectionText struct {
	channel, from, to int
	chEnd             int
	fromAt, fromEnd   int
	toAt, toEnd       int
	via               string
	recv              bool
	// viaAt is where the transport starts; viaHoldsN says whether it holds an 'N' (where an
	// "NCCL " of a second record would start: nothing before the transport holds one).
	viaAt     int
	viaHoldsN bool
}

// read parses the connection at the start of s (channelAfter's grammar), its numbers read as
// it goes; false if there is none.
func (c *connectionText) read(s string) bool {
	var ok bool
	if c.channel, c.chEnd, ok = numberAt(s, 0); !ok {
		if c.channel, c.chEnd, ok = longNumberAt(s, 0); !ok {
			return false
		}
	}
	i := c.chEnd
	if i < len(s) && s[i] == '/' {
		at := i + 1
		if _, i, ok = numberAt(s, at); !ok {
			if _, i, ok = longNumberAt(s, at); !ok {
				return false
			}
		}
	}
	// The separators are compared as constants, a load or two each; one passed to a function
	// as a string was a call to compare three bytes.
	if len(s)-i < len(" : ") || s[i:i+len(" : ")] != " : " {
		return false
	}
	if c.from, c.fromAt, c.fromEnd, i, ok = rankAt(s, i+len(" : ")); !ok {
		return false
	}
	if len(s)-i < len(" -> ") || s[i:i+len(" -> ")] != " -> " {
		return false
	}
	if c.to, c.toAt, c.toEnd, i, ok = rankAt(s, i+len(" -> ")); !ok {
		return false
	}
	c.recv = false
	if i+1 < len(s) && s[i+1] == '[' {
		switch rest := s[i:]; {
		case strings.HasPrefix(rest, " [send] via "):
			i += len(" [send]")
		case strings.HasPrefix(rest, " [receive] via "):
			i, c.recv = i+len(" [receive]"), true
		}
	}
	if len(s)-i <= len(" via ") || s[i:i+len(" via ")] != " via " {
		return false
	}
	c.viaAt = i + len(" via ")
	rest := s[c.viaAt:]
	if c.via = trimSpaceRight(rest); c.via == "" {
		c.via = rest[:1] // ".+?" takes one character at least
	}
	// Both tests need a '[', which a transport seldom holds: found first, with the transport's
	// 'N's, in one pass.
	var bracket bool
	bracket, c.viaHoldsN = holdsBracketAndN(rest)
	c.recv = c.recv || bracket && (strings.Contains(rest, " [receive] via ") || strings.HasPrefix(rest, "[receive] via "))
	return true
}

// holdsBracketAndN says whether s holds a '[' and whether it holds an 'N': eight bytes at a
// time (a byte is one where x^b is zero), as a transport is a few words and two searches cost
// a call each. The last eight bytes are read as one word, overlapping the word before (a byte
// read twice changes no answer); a shorter s is one word padded with zeros, which are neither.
func holdsBracketAndN(s string) (bracket, n bool) {
	var b, m uint64
	if len(s) < 8 {
		var x uint64
		for i := 0; i < len(s); i++ {
			x |= uint64(s[i]) << (8 * i)
		}
		return bytesAre(x, '[') != 0, bytesAre(x, 'N') != 0
	}
	for i := 0; ; i += 8 {
		if i > len(s)-8 {
			i = len(s) - 8
		}
		x := binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
		b |= bytesAre(x, '[')
		m |= bytesAre(x, 'N')
		if i == len(s)-8 {
			return b != 0, m != 0
		}
	}
}

// rankAt reads a rank and its optional bus id at s[at:]: the rank, where its digits lie, and
// where the bus id ends.
func rankAt(s string, at int) (rank, _, end, next int, ok bool) {
	if rank, end, ok = numberAt(s, at); !ok {
		if rank, end, ok = longNumberAt(s, at); !ok {
			return 0, 0, 0, 0, false
		}
	}
	return rank, at, end, busIDEnd(s, end), true
}

// numberAt reads the one to nine digits at s[i:]: the number and where it ends, ok false when
// there are none or more (longNumberAt reads those). It is small enough to be inlined into the
// connection's reader, which reads five numbers a line.
func numberAt(s string, i int) (int, int, bool) {
	n, j := 0, i
	for j < len(s) && s[j]-'0' <= 9 { // a byte below '0' wraps past 9
		n = n*10 + int(s[j]-'0')
		j++
	}
	return n, j, j > i && j-i <= 9
}

// longNumberAt reads the digits at s[i:] as atoi does, past what numberAt reads (overflow
// included): the number and where it ends, ok false when there are none.
func longNumberAt(s string, i int) (int, int, bool) {
	j := i
	for j < len(s) && s[j]-'0' <= 9 {
		j++
	}
	return atoi(s[i:j]), j, j > i
}

// busIDEnd is where an optional "[<lowercase hex>]" at s[i:] ends.
func busIDEnd(s string, i int) int {
	if i >= len(s) || s[i] != '[' {
		return i
	}
	j := i + 1
	for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] >= 'a' && s[j] <= 'f') {
		j++
	}
	if j > i+1 && j < len(s) && s[j] == ']' {
		return j + 1
	}
	return i
}

func leadDigits(s string) (string, string) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i], s[i:]
}

// channelOf is a connection line's fields, behind the substring every one holds.
func channelOf(s string) (channel, from, to, via string, ok bool) {
	if !holdsSpaced(s, "via ") {
		return "", "", "", "", false
	}
	return parseChannel(s)
}

// holdsSpaced is strings.Contains(s, " "+word), found from word's first byte: a search from
// the leading space stopped at each of a line's many spaces.
func holdsSpaced(s, word string) bool {
	for i := 1; i < len(s); {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		i += j
		if s[i-1] == ' ' {
			return true
		}
		i++
	}
	return false
}

// deviceNumbers replaces every "/<digits>" that ends a word with "/<n>" (what netDevice's
// ReplaceAllString does), so a transport is one row whatever NIC carried it.
func deviceNumbers(via string) string {
	if !strings.Contains(via, "/") {
		return via
	}
	var b strings.Builder
	for i := 0; i < len(via); i++ {
		if via[i] == '/' {
			j := i + 1
			for j < len(via) && via[j] >= '0' && via[j] <= '9' {
				j++
			}
			if j > i+1 && (j == len(via) || !wordByte(via[j])) {
				b.WriteString("/<n>")
				i = j - 1
				continue
			}
		}
		b.WriteByte(via[i])
	}
	return b.String()
}

// wordByte is RE2's \w: [0-9A-Za-z_].
func wordByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

// trimSpaceRight is s without the spaces RE2's \s matches at its end (strings.TrimRight with a
// cutset builds its set on every call: this is the hot path).
func trimSpaceRight(s string) string {
	i := len(s)
	for i > 0 && (s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n' || s[i-1] == '\f' || s[i-1] == '\r') {
		i--
	}
	return s[:i]
}
