package doctor

import (
	"slices"
	"strings"
)

// readCommInit reads what commRe matches, by hand: every rank prints its communicators' Init
// lines, each its own text, so they are the expression's most frequent input. It returns
// commRe's submatches (whole, comm, rank, nranks, cudaDev, busId, parent, commId,
// START|COMPLETE), nil where it does not match. FuzzPrefixStartIsTheWholeMatch holds it to
// commRe.
func readCommInit(s string) []string { return firstCommMatch(s, commInitAt) }

// firstCommMatch is the first match at an occurrence of "comm 0x" in s, in order: the
// leftmost match of an expression that starts so.
func firstCommMatch(s string, at func(s string, i int) []string) []string {
	return firstMatchFrom(s, "comm 0x", at)
}

// firstMatchFrom is the first match at an occurrence of start in s, in order: the leftmost
// match of an expression that starts with that text.
func firstMatchFrom(s, start string, at func(s string, i int) []string) []string {
	for from := 0; ; {
		i := strings.Index(s[from:], start)
		if i < 0 {
			return nil
		}
		i += from
		from = i + 1
		if m := at(s, i); m != nil {
			return m
		}
	}
}

// commInitAt matches commRe at s[i:], which starts "comm 0x".
func commInitAt(s string, i int) []string {
	var m [9]string
	p, ok := initFieldsAt(s, i, &m)
	if !ok {
		return nil
	}
	// ".*?(?: commId (0x…))? - Init (START|COMPLETE)": the first position, before any newline,
	// where the commId form or the plain form ends the match.
	for q := p; q < len(s) && s[q] != '\n'; q++ {
		if s[q] != ' ' {
			continue
		}
		if end, ok := initEndAt(s, q, &m); ok {
			m[0] = s[i:end]
			return slices.Clone(m[:]) // the array stays on the stack for the lines it does not read
		}
	}
	return nil
}

// initFieldsAt reads an Init line's fields at s[i:], which starts "comm 0x", into m (comm,
// rank, nranks, cudaDev, busId, parent): where the optional ones end.
func initFieldsAt(s string, i int, m *[9]string) (int, bool) {
	p := i + len("comm ")
	var ok bool
	if m[1], p, ok = hexAt(s, p); !ok {
		return 0, false
	}
	if p, ok = labelledDigits(s, p, m[2:5], " rank ", " nranks ", " cudaDev "); !ok {
		return 0, false
	}
	// Optional fields, each taken where it matches: text they leave would be read by the
	// lazy ".*?" that follows, and no " - Init" or " commId" can start inside one.
	if rest, ok := strings.CutPrefix(s[p:], " nvmlDev "); ok {
		if d, q := digitsAt(s, len(s)-len(rest)); d != "" {
			p = q
		}
	}
	if rest, ok := strings.CutPrefix(s[p:], " busId "); ok {
		if h, q := lowerHexAt(s, len(s)-len(rest)); h != "" {
			m[5], p = h, q
		}
	}
	if rest, ok := strings.CutPrefix(s[p:], " parent "); ok {
		if h, q, ok := hexAt(s, len(s)-len(rest)); ok {
			m[6], p = h, q
		}
	}
	return p, true
}

// initEndAt reads an Init line's end at s[q:], " commId 0x… - Init STATE" or " - Init STATE",
// into m (commId, state): where it ends.
func initEndAt(s string, q int, m *[9]string) (int, bool) {
	if rest, ok := strings.CutPrefix(s[q:], " commId "); ok {
		if h, r, ok := hexAt(s, len(s)-len(rest)); ok {
			if state, end := initStateAt(s, r); state != "" {
				m[7], m[8] = h, state
				return end, true
			}
		}
	}
	if state, end := initStateAt(s, q); state != "" {
		m[8] = state
		return end, true
	}
	return 0, false
}

// initStateAt reads " - Init START" or " - Init COMPLETE" at s[p:]: the state and where it ends.
func initStateAt(s string, p int) (string, int) {
	rest, ok := strings.CutPrefix(s[p:], " - Init ")
	if !ok {
		return "", 0
	}
	for _, state := range []string{"START", "COMPLETE"} {
		if strings.HasPrefix(rest, state) {
			return state, len(s) - len(rest) + len(state)
		}
	}
	return "", 0
}

// hexAt reads "0x" and lowercase hex digits at s[p:] (0x[0-9a-f]+).
func hexAt(s string, p int) (string, int, bool) {
	if !strings.HasPrefix(s[p:], "0x") {
		return "", p, false
	}
	h, q := lowerHexAt(s, p+2)
	if h == "" {
		return "", p, false
	}
	return s[p:q], q, true
}

// lowerHexAt reads [0-9a-f]+ at s[p:], "" if none.
func lowerHexAt(s string, p int) (string, int) {
	q := p
	for q < len(s) && (s[q] >= '0' && s[q] <= '9' || s[q] >= 'a' && s[q] <= 'f') {
		q++
	}
	return s[p:q], q
}

// labelledDigits reads each label followed by \d+, one after another from s[p:], into into
// (one per label): where they end, or ok false where a label or its digits are missing.
func labelledDigits(s string, p int, into []string, labels ...string) (int, bool) {
	for k, label := range labels {
		if !strings.HasPrefix(s[p:], label) {
			return p, false
		}
		if into[k], p = digitsAt(s, p+len(label)); into[k] == "" {
			return p, false
		}
	}
	return p, true
}

// digitsAt reads \d+ at s[p:], "" if none.
func digitsAt(s string, p int) (string, int) {
	d, _ := leadDigits(s[p:])
	return d, p + len(d)
}

// readCommNodes reads what nodesRe matches, by hand (every rank prints one per communicator):
// whole, comm, nNodes, localRanks; nil where it does not match.
func readCommNodes(s string) []string { return firstCommMatch(s, commNodesAt) }

// commNodesAt matches nodesRe at s[i:], which starts "comm 0x".
func commNodesAt(s string, i int) []string {
	comm, p, ok := hexAt(s, i+len("comm "))
	if !ok {
		return nil
	}
	var got [5]string
	if p, ok = labelledDigits(s, p, got[:], " rank ", " nRanks ", " nNodes ", " localRanks ", " localRank "); !ok {
		return nil
	}
	return []string{s[i:p], comm, got[0], got[1], got[2], got[3]}
}

// readOldComm reads what oldCommRe matches, by hand: every Init line holds its key ("nranks "),
// and the expression, which starts with an optional group, ran on each. Whole, comm (""
// without one), rank, nranks; nil where it does not match.
func readOldComm(s string) []string {
	p, comm := 0, ""
	if strings.HasPrefix(s, "comm ") {
		// The optional group must match here: without it the text would have to start "rank ".
		h, q, ok := hexAt(s, len("comm "))
		if !ok || !strings.HasPrefix(s[q:], " ") {
			return nil
		}
		comm, p = h, q+1
	}
	var got [2]string
	p, ok := labelledDigits(s, p, got[:], "rank ", " nranks ")
	if !ok {
		return nil
	}
	for ; p < len(s); p++ { // \s*$: RE2's \s is [\t\n\f\r ]
		switch s[p] {
		case ' ', '\t', '\n', '\f', '\r':
		default:
			return nil
		}
	}
	return []string{s, comm, got[0], got[1]}
}

// readCommMNNVL reads what commMNNVLRe matches, by hand (every rank prints one per
// communicator from NCCL 2.20.3): whole and the MNNVL digit, from the first "nNodes " that
// starts a match.
func readCommMNNVL(s string) []string { return firstMatchFrom(s, "nNodes ", commMNNVLAt) }

// commMNNVLAt matches commMNNVLRe at s[i:], which starts "nNodes ".
func commMNNVLAt(s string, i int) []string {
	p := i + len("nNodes ")
	for _, label := range []string{" localRanks ", " localRank ", " MNNVL "} {
		var d string
		if d, p = digitsAt(s, p); d == "" || !strings.HasPrefix(s[p:], label) {
			return nil
		}
		p += len(label)
	}
	if p < len(s) && s[p] >= '0' && s[p] <= '9' {
		return []string{s[i : p+1], s[p : p+1]}
	}
	return nil
}

// exactInitLine reads msg when it is a communicator's Init line and nothing else: its fields
// alone, one space apart ("comm 0x… rank N nranks N cudaDev N[ nvmlDev N][ busId x][ parent
// 0x…][ commId 0x…] - Init START|COMPLETE"), as every rank prints two per communicator. It
// returns commRe's submatches, nil for any other message (which readMessage reads whole).
// What such a message holds of msgLiterals is fixed by its form (initLineLiterals), and commRe
// is the one expression it matches (FuzzExactInitLineIsReadMessage).
func exactInitLine(msg string) []string {
	if !strings.HasPrefix(msg, "comm 0x") {
		return nil
	}
	// commInitAt's fields, and its end right after them: no text for its ".*?".
	var m [9]string
	p, ok := initFieldsAt(msg, 0, &m)
	if !ok {
		return nil
	}
	if end, ok := initEndAt(msg, p, &m); !ok || end != len(msg) {
		return nil
	}
	m[0] = msg
	return slices.Clone(m[:]) // the array stays on the stack for the messages it does not read
}

// initLineLiterals is what every message exactInitLine reads holds of msgLiterals: found once
// every literal is in the set (init runs after every package variable, messageWord's among them).
var initLineLiterals literalBits

func init() { initLineLiterals = msgLiterals.in("comm 0x1 rank 0 nranks 1 cudaDev 0 - Init START") }

// exactShapeLine reads msg when it is a communicator's shape line and nothing else ("comm 0x…
// rank N nRanks N nNodes N localRanks N localRank N MNNVL d", one per rank and communicator
// from NCCL 2.20.3): nodesRe's and commMNNVLRe's submatches, nil for any other message. What
// such a message holds of msgLiterals is fixed by its form (shapeLineLiterals), and these two
// are the expressions it matches (FuzzExactShapeLineIsReadMessage).
func exactShapeLine(msg string) (nodes, mnnvl []string) {
	if !strings.HasPrefix(msg, "comm 0x") {
		return nil, nil
	}
	// nodesRe's match at the start and room for " MNNVL d" alone after it; commMNNVLRe's match
	// from the first "nNodes " (the label: nothing before it holds one) reads the same fields,
	// so where it matches it ends the message.
	if nodes = commNodesAt(msg, 0); nodes == nil || len(msg) != len(nodes[0])+len(" MNNVL 0") {
		return nil, nil
	}
	if mnnvl = commMNNVLAt(msg, strings.Index(msg, "nNodes ")); mnnvl == nil {
		return nil, nil
	}
	return nodes, mnnvl
}

// shapeLineLiterals is what every message exactShapeLine reads holds of msgLiterals, and
// nodesFirst says whether nodesRe comes before commMNNVLRe among the message expressions
// (readMessage's hits are in their order).
var (
	shapeLineLiterals literalBits
	nodesFirst        bool
)

func init() {
	shapeLineLiterals = msgLiterals.in("comm 0x1 rank 0 nRanks 1 nNodes 1 localRanks 1 localRank 0 MNNVL 0")
	nodesFirst = slices.Index(msgExprs.exprs, nodesRe) < slices.Index(msgExprs.exprs, commMNNVLRe)
}
