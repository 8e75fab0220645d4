package doctor

import (
	"slices"
	"strings"
	"unicode/utf8"

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

	// A connection ("Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"), read from msg, or from the
	// whole line of a record without NCCL's prefix (a pasted excerpt).
	conn              bool
	channel, from, to int
	via, where        string // the transport, one row whatever NIC carried it, and placeTransport's word

	hits         []hit  // the keyed expressions the record's line matched (lineExprs)
	msgHits      []hit  // and its message (shared by records of the same message)
	failuresRead bool   // failureExprs were read (the others always are)
	warnKey      string // a WARN message with its pointers blanked: the same warning from every rank
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
// but the watchdog's holds "rror" (the line after "Last error:" is read whatever it holds).
func mayReportFailure(line string) bool {
	return strings.Contains(line, "rror") || strings.Contains(line, "Watchdog")
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
	onFailure = []*keyedRe{ncclErrorInRe, resultRe, shmSegmentRe, watchdogRe}
	onMsg     = byGate(slices.DeleteFunc(slices.Clone(keyedExprs), func(k *keyedRe) bool {
		return k == versionRe || slices.Contains(onFailure, k)
	}))
)

// reading is one worker's state while it reads a batch: where records' hits are kept, and
// the transports already placed (a log names a handful; normalising one allocates).
type reading struct {
	hits   []hit
	placed map[string][2]string
	// said is what each message of the batch matched, by its text: every rank prints the same
	// announcements ("NET/OFI Selected provider is efa …"), and a message is read once.
	said map[string][]hit
}

// readLine turns one physical line into its records, appending them to out.
func (rd *reading) readLine(raw string, cut int64, out []record) []record {
	first := record{newLine: true, cut: cut}
	if !utf8.ValidString(raw) || strings.IndexByte(raw, 0) >= 0 {
		first.binary = true
		return append(out, first)
	}
	texts := splitRecords(raw)
	if len(texts) < 2 {
		texts = []string{raw}
	} else {
		first.joined = true
	}
	for i, text := range texts {
		r := first
		if i > 0 {
			r = record{}
		}
		r.line = text
		rd.read(&r)
		out = append(out, r)
	}
	return out
}

// read works out what the record says by itself.
func (rd *reading) read(r *record) {
	start := len(rd.hits)
	if m := versionRe.find(r.line); m != nil {
		rd.hits = append(rd.hits, hit{versionRe, m})
	}
	if r.failuresRead = mayReportFailure(r.line); r.failuresRead {
		for _, k := range onFailure {
			if m := k.find(r.line); m != nil {
				rd.hits = append(rd.hits, hit{k, m})
			}
		}
	}
	r.hits = rd.hits[start:len(rd.hits):len(rd.hits)]
	r.host, r.pid, r.tid, r.level, r.msg, r.nccl = splitNCCL(r.line)
	text := r.line
	if r.nccl {
		text = r.msg
		// The hot path: a message that starts "Channel " is a connection or a ring's order,
		// and nothing else is read of it.
		if !strings.HasPrefix(r.msg, "Channel ") {
			r.msgHits = rd.readMessage(r.msg)
		}
		if r.level == "WARN" {
			r.warnKey = hexNumber.ReplaceAllString(strings.TrimSpace(r.msg), "0x…")
		}
	}
	if ch, from, to, via, ok := channelOf(text); ok {
		r.conn, r.channel, r.from, r.to = true, atoi(ch), atoi(from), atoi(to)
		p, ok := rd.placed[via]
		if !ok {
			p[0], p[1] = placeTransport(via)
			rd.placed[via] = p
		}
		r.via, r.where = p[0], p[1]
	}
}

// readMessage is what an NCCL message matches of the expressions that read messages.
func (rd *reading) readMessage(msg string) []hit {
	if hits, ok := rd.said[msg]; ok {
		return hits
	}
	start := len(rd.hits)
	for _, g := range onMsg {
		if g.gate != "" && !strings.Contains(msg, g.gate) {
			continue
		}
		for _, k := range g.exprs {
			if m := k.findPastGate(msg); m != nil {
				rd.hits = append(rd.hits, hit{k, m})
			}
		}
	}
	hits := rd.hits[start:len(rd.hits):len(rd.hits)]
	rd.said[msg] = hits
	return hits
}

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
