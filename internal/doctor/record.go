package doctor

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/gpucluster/gpucluster/components/topology"
)

// record is one NCCL record of a log, read without the parse's state: everything the parse
// can work out from the record alone (its process prefix, the expressions it matches, the
// connection it logs) is worked out here, on many lines at once (eachRecord), and the parse
// itself only applies the results in order.
type record struct {
	line string // the record's text: a whole line, or one record of a line holding several

	// Of the physical line, on its first record only.
	newLine bool
	cut     int64 // bytes past maxLine that were not read
	binary  bool  // not text (invalid UTF-8 or NUL): nothing else was read
	joined  bool  // the line held several records

	// The NCCL prefix (splitNCCL), when nccl.
	nccl                       bool
	host, pid, tid, level, msg string
	slot                       int    // threadSlot of pid and tid, worked out here, not where records are applied one by one
	loc                        string // a WARN's source file (its location without line or function)
	class                      string // the failure class a WARN's words name (classifyFailure), "" if none

	// A connection ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"), read from msg, or from the
	// whole line of a record without NCCL's prefix (a pasted excerpt).
	conn              bool
	channel, from, to int
	via, where        string // the transport, one row whatever NIC carried it, and placeTransport's word
	printer           int    // the rank whose process logs the connection: the receiver of a "[receive]" line, else the sender
	commRanks         int    // the communicator's size RCCL appends to the line (0: none)

	// A ring's order ("Channel 03/24 :    0   1   2   3"): the channel and, from NCCL 2.12, how
	// many channels the communicator has (0 when the line does not say).
	ring               bool
	ringChannel, rings int

	hits         []hit       // the keyed expressions the record's line matched (lineExprs)
	msgHits      []hit       // and its message (shared by records of the same message)
	msgHolds     literalBits // the literals of msgLiterals its message holds (readMessage)
	failuresRead bool        // failureExprs were read (the others always are)
	warnKey      string      // a WARN message with its pointers blanked: the same warning from every rank
}

// hit is one keyed expression's submatches.
type hit struct {
	re *keyedRe
	m  []string
}

// find is what k matched in the record (over the whole line for lineExprs, over the NCCL
// message otherwise), nil if nothing.
func (r *record) find(k *keyedRe) []string {
	for _, h := range r.hits {
		if h.re == k {
			return h.m
		}
	}
	for _, h := range r.msgHits {
		if h.re == k {
			return h.m
		}
	}
	return nil
}

// mayReportFailure says whether Failures.read looks at a line by itself: every failure it reads
// holds one of these words (the line after "Last error:" is read whatever it holds).
func mayReportFailure(line string) bool {
	return strings.Contains(line, "rror") || strings.Contains(line, "atchdog") || strings.Contains(line, "ailure") ||
		strings.Contains(line, "libfabric:") || strings.Contains(line, "imeout") || strings.Contains(line, "timed out") ||
		strings.Contains(line, "ation fault") || strings.Contains(line, "SIGSEGV") || strings.Contains(line, "SIGBUS")
}

// findOnLine is what a failure expression matched in the record, read now if the worker did
// not read it (a line Failures.read looks at only because of the line before).
func (r *record) findOnLine(k *keyedRe) []string {
	if r.failuresRead {
		return r.find(k)
	}
	return k.find(r.line)
}

// Over a record's whole text (a traceback's lines carry no NCCL prefix): versionRe on every
// line, onFailure on the lines Failures.read looks at. Every other keyed expression reads an
// NCCL record's message, grouped by gate.
var (
	onFailure = []*keyedRe{ncclErrorInRe, resultRe, shmSegmentRe, watchdogRe, asyncErrorRe, libfabricRe, testFailureRe, hangRe, crashRe}
	onMsg     = byGate(slices.DeleteFunc(slices.Clone(keyedExprs), func(k *keyedRe) bool {
		return k == versionRe || slices.Contains(onFailure, k)
	}))
	// msgLiterals are onMsg's gates and keys, looked for in one pass over a message.
	msgLiterals = indexLiterals(onMsg)
	// msgExprs finds the expressions a message's literals let run.
	msgExprs = indexExprs(onMsg)
)

// indexLiterals gives every gate and key of groups its index in one literalSet.
func indexLiterals(groups []gateGroup) *literalSet {
	set := newLiteralSet()
	for i := range groups {
		g := &groups[i]
		g.gateID = set.id(g.gate)
		for _, k := range g.exprs {
			k.keyIDs = k.keyIDs[:0]
			for _, key := range k.keys {
				k.keyIDs = append(k.keyIDs, set.id(key))
			}
		}
	}
	return set
}

// reading is one worker's state while it reads a batch: where records' hits are kept, and
// the transports already placed (a log names a handful; normalising one allocates).
type reading struct {
	hits   []hit
	placed map[string]*placed
	// placedList is every transport placed, in the order placed (placed.id): a connRec names
	// its transport by its index.
	placedList []*placed
	// lastPlaced is the transport placed last, and placedAt the one placed last at each slot
	// (by a hash of its text): a line's transport found without the map's lookup.
	lastPlaced *placed
	placedAt   [64]*placed
	// said is what each message matched, by its text: every rank prints the same
	// announcements ("NET/OFI Selected provider is efa …"), and a message is read once. It
	// outlives its batch (batch.reset empties it past maxSaid messages) and keeps copies of its
	// own of messages up to maxSaidBytes and their hits (rd.hits is read into again, and a line
	// may be a megabyte): what it holds stays under maxSaid × maxSaidBytes, whatever the log.
	said map[string]readMessageResult
	// classed is the failure class of each WARN message (every rank prints the same), kept as
	// said is.
	classed map[string]string
}

// placed is a transport as a connection logged it (its key in reading.placed, a copy of its
// own: the buffer it was read from is read into again), its row (placeTransport), where NCCL
// put its peer, and the communicator's size RCCL appends to it (0: none). It is never changed
// once made.
type placed struct {
	via, name, where string
	commRanks        int
	id               int // its index in its reading's placedList
}

// classOf is classifyFailure of a WARN's message, once per batch.
func (rd *reading) classOf(msg string) string {
	c, ok := rd.classed[msg]
	if !ok {
		c = classifyFailure(msg)
		if len(msg) <= maxSaidBytes {
			rd.classed[strings.Clone(msg)] = c
		}
	}
	return c
}

// readLine turns one physical line into its records, appending them to out. plain says the
// line is known to be plain text (plainText of its block).
func (rd *reading) readLine(raw string, cut int64, plain bool, out []record) []record {
	// Records are filled where they stay: a record is too large to copy twice per line.
	out = append(out, record{newLine: true, cut: cut})
	first := &out[len(out)-1]
	var ascii, nul, esc, em bool
	if plain {
		ascii = true
	} else {
		ascii, nul, esc, em = scanBytes(raw)
	}
	if !ascii && !utf8.ValidString(raw) || nul {
		first.binary = true
		return out
	}
	if esc || em && resetCode(raw) {
		raw = withoutColour(raw) // Ray and other launchers colour their own words
	}
	m := markNCCL(raw)
	texts := splitRecords(raw, m)
	if len(texts) < 2 {
		first.line = raw
		rd.read(first, m)
		return out
	}
	first.joined = true
	for i, text := range texts {
		if i > 0 {
			out = append(out, record{})
		}
		r := &out[len(out)-1]
		r.line = text
		rd.read(r, markNCCL(text))
	}
	return out
}

// resetCode says whether s holds "[0m", a colour's reset whose ESC a paste lost: looked for
// from its 'm', which a log's lines hold far fewer of than '['.
func resetCode(s string) bool {
	return byteWhere(s, 'm', func(i int) bool { return i >= 2 && s[i-2] == '[' && s[i-1] == '0' })
}

// byteWhere says whether s holds b at an index where at holds: each b found by the runtime's
// vector search, where b is rare enough that a general search would cost more.
func byteWhere(s string, b byte, at func(i int) bool) bool {
	for i := strings.IndexByte(s, b); i >= 0; {
		if at(i) {
			return true
		}
		j := strings.IndexByte(s[i+1:], b)
		if j < 0 {
			return false
		}
		i += 1 + j
	}
	return false
}

// scanBytes says, in one pass, whether s is all ASCII, holds a NUL, an ESC and an 'm' (which
// resetCode looks for first): eight bytes at a time, as a log's lines are long and almost
// always plain ASCII.
func scanBytes(s string) (ascii, nul, esc, em bool) {
	var high, zero, escape, emm uint64
	for len(s) >= 8 { // re-slicing lets the compiler read the eight bytes with one load
		x := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		s = s[8:]
		high |= x
		zero |= bytesAre(x, 0)
		escape |= bytesAre(x, 0x1b)
		emm |= bytesAre(x, 'm')
	}
	high &= highBits
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x80:
			high = 1
		case c == 0:
			zero = 1
		case c == 0x1b:
			escape = 1
		case c == 'm':
			emm = 1
		}
	}
	return high == 0, zero != 0, escape != 0, emm != 0
}

// plainText says whether s is ASCII without NUL, ESC or a colour reset ("[0m"), so that no
// line in it needs scanBytes: a block at a time, as nearly every block of a log is. The ASCII
// test reads 32 bytes a step; NUL and ESC are found by the runtime's vector search.
func plainText(s string) bool {
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	var high uint64
	for len(b) >= 32 {
		high |= binary.LittleEndian.Uint64(b) | binary.LittleEndian.Uint64(b[8:]) |
			binary.LittleEndian.Uint64(b[16:]) | binary.LittleEndian.Uint64(b[24:])
		b = b[32:]
	}
	for _, c := range b {
		high |= uint64(c)
	}
	return high&highBits == 0 && strings.IndexByte(s, 0) < 0 && strings.IndexByte(s, 0x1b) < 0 && !resetCode(s)
}

// read works out what the record says by itself.
func (rd *reading) read(r *record, marks marks) {
	start := len(rd.hits)
	if marks.version { // versionRe's key
		if m := versionRe.submatches(r.line); m != nil {
			rd.hits = append(rd.hits, hit{versionRe, m})
		}
	}
	r.host, r.pid, r.tid, r.level, r.msg, r.nccl = splitMarked(r.line, marks)
	if r.nccl {
		r.slot = threadSlot(r.pid, r.tid)
	}
	// An NCCL INFO record is none of the failures Failures.read looks for (a framework's, a
	// launcher's, libfabric's, nccl-tests'; a WARN may be the shared-memory one): most of a log,
	// its words are not looked for. readNCCL follows NCCL's own records.
	if r.failuresRead = (!r.nccl || r.level == "WARN") && mayReportFailure(r.line); r.failuresRead {
		for _, k := range onFailure {
			if m := k.find(r.line); m != nil {
				rd.hits = append(rd.hits, hit{k, m})
			}
		}
	}
	r.hits = rd.hits[start:len(rd.hits):len(rd.hits)]
	text := r.line
	messageRead := false // readMessage found the literals text holds (r.msgHolds)
	if r.nccl {
		text = r.msg
		// The hot path: a message that starts "Channel " is a connection or a ring's order,
		// and nothing else is read of it.
		if !strings.HasPrefix(r.msg, "Channel ") {
			r.msgHits, r.msgHolds = rd.readMessage(r.msg)
			messageRead = true
		}
		if r.level == "WARN" {
			r.warnKey = hexNumber.ReplaceAllString(strings.TrimSpace(r.msg), "0x…")
			r.loc = warnFile(r.line)
			r.class = rd.classOf(r.warnKey)
		}
	}
	if r.nccl && strings.HasPrefix(r.msg, "Channel ") {
		// The hot path: when a connection starts the message, it is the leftmost match
		// channelOf would find, without looking for one.
		if ch, from, to, via, recv, ok := channelAfter(r.msg[len("Channel "):]); ok {
			rd.connection(r, recv, ch, from, to, via)
			return
		}
		if ch, n, ok := ringOrder(r.msg); ok {
			r.ring, r.ringChannel, r.rings = true, ch, n
			return
		}
	}
	// Every connection holds " via ", which readMessage's pass already looked for: the other
	// messages (communicators', announcements) are spared channelOf's own search.
	if messageRead && !r.mentions(wordVia) {
		return
	}
	if ch, from, to, via, ok := channelOf(text); ok {
		rd.connection(r, strings.Contains(text, " [receive] via "), ch, from, to, via)
	}
}

// connection fills r with the connection channelOf read, logged by its receiver if recv.
func (rd *reading) connection(r *record, recv bool, ch, from, to, via string) {
	var c connectionNumbers
	rd.connectionOf(&c, recv, atoi(ch), atoi(from), atoi(to), via)
	r.conn, r.channel, r.from, r.to, r.printer, r.commRanks = true, c.channel, c.from, c.to, c.printer, c.commRanks
	r.via, r.where = c.via.name, c.via.where
}

// connectionNumbers is a connection as the parse counts it: its numbers, and its transport
// as placed.
type connectionNumbers struct {
	channel, from, to int
	printer           int // the rank whose process logs the connection: the receiver of a "[receive]" line, else the sender
	commRanks         int // the communicator's size RCCL appends to the line (0: none)
	via               *placed
}

// connectionOf fills c with a connection's numbers and transport, logged by its receiver if recv.
func (rd *reading) connectionOf(c *connectionNumbers, recv bool, ch, from, to int, via string) {
	c.channel, c.from, c.to, c.via = ch, from, to, rd.place(via)
	c.printer = from
	if recv {
		c.printer = to
	}
	c.commRanks = c.via.commRanks
}

// place is the transport a connection logged, placed: the last one placed, then the one its
// hash's slot holds, are looked at before the map (a job's connections alternate between a
// few: P2P and a transport per NIC, dozens on a p5).
func (rd *reading) place(via string) *placed {
	if p := rd.lastPlaced; p != nil && p.via == via {
		return p
	}
	slot := &rd.placedAt[maphash.String(placedSeed, via)%uint64(len(rd.placedAt))]
	if p := *slot; p != nil && p.via == via {
		rd.lastPlaced = p
		return p
	}
	p := rd.placed[via]
	if p == nil {
		// Cloned: via may point into a batch's buffer, which is read again, and the
		// transport is kept.
		p = &placed{via: strings.Clone(via), id: len(rd.placedList)}
		rd.placedList = append(rd.placedList, p)
		p.name, p.where = placeTransport(transportName(p.via))
		if strings.IndexByte(via, ' ') >= 0 && strings.Contains(via, " nRanks ") { // most transports hold no space
			if m := rcclRanksRe.FindStringSubmatch(via); m != nil {
				p.commRanks = atoi(m[1])
			}
		}
		rd.placed[p.via] = p
	}
	*slot, rd.lastPlaced = p, p
	return p
}

// placedSeed seeds the hash of reading.placedAt's slots.
var placedSeed = maphash.MakeSeed()

// readMessage is what an NCCL message matches of the expressions that read messages, and the
// literals it holds.
func (rd *reading) readMessage(msg string) ([]hit, literalBits) {
	// A communicator's line names its own pointer ("comm 0x…"), so it never repeats: looking
	// it up, and keeping it, would cost a hash of the whole message for nothing.
	unique := strings.HasPrefix(msg, "comm 0x")
	if !unique {
		if r, ok := rd.said[msg]; ok {
			return r.hits, r.holds
		}
	} else if m := exactInitLine(msg); m != nil {
		// Three lines per rank and communicator, read by their form alone.
		rd.hits = append(rd.hits, hit{commRe, m})
		return rd.hits[len(rd.hits)-1 : len(rd.hits) : len(rd.hits)], initLineLiterals
	} else if nodes, mnnvl := exactShapeLine(msg); nodes != nil {
		first, second := hit{nodesRe, nodes}, hit{commMNNVLRe, mnnvl}
		if !nodesFirst {
			first, second = second, first
		}
		rd.hits = append(rd.hits, first, second)
		return rd.hits[len(rd.hits)-2 : len(rd.hits) : len(rd.hits)], shapeLineLiterals
	}
	hits, holds := rd.matchMessage(msg)
	if !unique && len(msg) <= maxSaidBytes {
		rd.said[strings.Clone(msg)] = readMessageResult{ownHits(hits), holds}
	}
	return hits, holds
}

// ownHits is a copy of hits, their submatches copies of their own: what a cache keeps outlives
// the line it was read from, which may be long (a message is often part of a line).
func ownHits(hits []hit) []hit {
	own := make([]hit, len(hits))
	for i, h := range hits {
		m := make([]string, len(h.m))
		for j, s := range h.m {
			m[j] = strings.Clone(s)
		}
		own[i] = hit{h.re, m}
	}
	return own
}

// matchMessage is every expression msg matches and the literals it holds, found from them.
func (rd *reading) matchMessage(msg string) ([]hit, literalBits) {
	start := len(rd.hits)
	holds := msgLiterals.in(msg)
	for run := msgExprs.runs(holds, msg); run != 0; run &= run - 1 {
		k := msgExprs.exprs[bits.TrailingZeros64(run)]
		if m := k.submatches(msg); m != nil {
			rd.hits = append(rd.hits, hit{k, m})
		}
	}
	return rd.hits[start:len(rd.hits):len(rd.hits)], holds
}

// readMessageResult is what readMessage gave a message.
type readMessageResult struct {
	hits  []hit
	holds literalBits
}

// mentions says whether the record's message holds a word of the parse's (messageWord).
func (r *record) mentions(word int) bool { return r.msgHolds.has(word) }

// messageWord is the id of a word the parse looks for in messages: found with the
// expressions' gates and keys in readMessage's one pass, not searched for again.
func messageWord(word string) int { return msgLiterals.id(word) }

// The words parseMessage looks for in a message.
var (
	wordOFI         = messageWord("NET/OFI")
	wordNoProviders = messageWord("No eligible providers were found")
	wordMNNVL       = messageWord("MNNVL")
	wordNVLS        = messageWord("NVLS")
	wordNVLinkSHARP = messageWord("NVLink SHARP")
	wordVia         = messageWord(" via ") // what channelOf's holdsSpaced(s, "via ") looks for
)

// placeTransport is one connection's transport, one row whatever NIC carried it, and where
// NCCL puts its peer: NCCL connects ranks it found on one node (the same host hash: one pod)
// with P2P, SHM or NVLS, and ranks on other nodes through a network (NET, CollNet).
func placeTransport(via string) (string, string) {
	via = deviceNumbers(via)
	switch topology.ClassifyTransport(via) {
	case topology.TransportNetSocket, topology.TransportNetLibfabric, topology.TransportNetLibfabricGDR, topology.TransportNetIB, topology.TransportCollNet:
		return via, "inter"
	case topology.TransportOther:
		if strings.HasPrefix(via, "NET/") {
			return via, "inter"
		}
	case topology.TransportP2P:
		// P2P/MNNVL reaches another node's GPU over an UltraServer's NVLink (src/transport/p2p.cc).
		if strings.Contains(via, "MNNVL") {
			return via, "inter"
		}
	}
	return via, "intra"
}

// warnFile is the source file a WARN line names before " NCCL WARN" ("transport/net_ib.cc" of
// "[0] transport/net_ib.cc:1295 NCCL WARN", also with 2.30.7's " (function)" after the line).
func warnFile(line string) string {
	i := strings.Index(line, " NCCL WARN")
	if i < 0 {
		return ""
	}
	pre := line[:i]
	j := strings.LastIndex(pre, "] ")
	if j < 0 {
		return ""
	}
	loc := pre[j+2:]
	if k := strings.Index(loc, " ("); k >= 0 {
		loc = loc[:k]
	}
	if k := strings.LastIndexByte(loc, ':'); k >= 0 {
		loc = loc[:k]
	}
	return loc
}

// transportName is a connection's transport without what follows it on the line: Ray's
// " [repeated 15x across cluster]", another record glued on, a note in parentheses. A transport's
// own name holds single spaces ("NET/AWS Libfabric/0", "direct shared memory") and parentheses
// only glued to it ("/GDRDMA(PCI)").
func transportName(via string) string {
	via = unwrapped(via)
	for _, end := range []string{" [", " (", "  ", "\t", " comm ", " rank "} {
		if i := strings.Index(via, end); i > 0 {
			via = via[:i]
		}
	}
	return via
}

// unwrapped joins a transport that a terminal wrapped and a copy joined again with the
// terminal's padding inside it ("P2P/IPC/re      ad", NVIDIA/nccl-tests#217 shows the same
// inside other records): a run of spaces inside a word, followed by the rest of that word alone.
func unwrapped(via string) string {
	i := strings.Index(via, "  ")
	if i <= 0 || !wordByte(via[i-1]) && via[i-1] != '/' {
		return via
	}
	rest := strings.TrimLeft(via[i:], " ")
	if rest == "" || strings.ContainsAny(rest, " \t") || !wordByte(rest[0]) {
		return via
	}
	return via[:i] + rest
}

// rcclRanksRe is RCCL's suffix to its connection lines ("via P2P/IPC/read comm 0x7f… nRanks 08",
// ROCm/rccl src/transport/p2p.cc, net.cc): the communicator's size. NVIDIA's NCCL prints none.
var rcclRanksRe = regexp.MustCompile(` comm 0x[0-9a-f]+ nRanks (\d+)`)

// withoutColour is s without its colour codes: ANSI CSI sequences (ESC '[', parameters, one
// final byte in '@'..'~'; "\x1b[36m(RayTrainWorker …)\x1b[0m", Ray's "\x1b[32m [repeated 23x
// across cluster]\x1b[0m", ray/_private/ray_logging), and the same colour codes whose ESC a paste
// lost or replaced by U+FFFD ("read[32m [repeated 7x …][0m", "\ufffd[36m(…)\ufffd[0m",
// vllm-project/vllm#5477), which would otherwise stick to a transport's name. A lone ESC is dropped.
func withoutColour(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == 0x1b:
			if i+1 < len(s) && s[i+1] == '[' {
				j := i + 2
				for j < len(s) && (s[j] < '@' || s[j] > '~') {
					j++
				}
				i = j // the final byte, or the end of a cut sequence
			}
			continue
		case strings.HasPrefix(s[i:], "\ufffd["):
			if n := sgrLength(s[i+len("\ufffd"):]); n > 0 {
				i += len("\ufffd") + n - 1
				continue
			}
		case s[i] == '[':
			if n := sgrLength(s[i:]); n > 0 {
				i += n - 1
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// sgrLength is the length of the colour code ("[32m", "[0m", "[1;36m") starting s, 0 if none.
func sgrLength(s string) int {
	if !strings.HasPrefix(s, "[") {
		return 0
	}
	j := len(s) - len(strings.TrimLeft(s[1:], "0123456789;"))
	if j == 1 || j >= len(s) || s[j] != 'm' {
		return 0
	}
	return j + 1
}

// ringOrder reads a ring's order, as NCCL logs each channel's ring when it sets up a
// communicator: "Channel 03/24 :    0   1   2   3" (2.5 and later: channel and channel count,
// src/graph/rings.cc), "Channel 03 :    0   1   2   3" (2.4, src/init.cc), then one rank after
// another, printed by rank 0. It returns the channel and the count (0 when the line gives none).
func ringOrder(msg string) (channel, count int, ok bool) {
	s := strings.TrimPrefix(msg, "Channel ")
	ch, s := leadDigits(s)
	if ch == "" {
		return 0, 0, false
	}
	n := ""
	if strings.HasPrefix(s, "/") {
		if n, s = leadDigits(s[1:]); n == "" {
			return 0, 0, false
		}
	}
	s, ok = strings.CutPrefix(s, " :")
	if !ok || strings.TrimSpace(s) == "" {
		return 0, 0, false
	}
	// Ranks and spaces only, and the "..." of a line 2.23 cut at 127 characters (src/graph/rings.cc).
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '.' && (c < '0' || c > '9') {
			return 0, 0, false
		}
	}
	return atoi(ch), atoi(n), true
}
