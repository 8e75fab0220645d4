package doctor

import (
	"math"
	"strings"
)

// connectionMarker stands before every connection NCCL logs at INFO ("host:pid:tid [dev] NCCL
// INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"): nine lines in ten of a job's log.
const connectionMarker = " NCCL INFO Channel "

// plainConnection is what plainConnectionOf reads of a plain connection line: where its host
// and its message start, its process and its connection.
type plainConnection struct {
	host, msg int
	hostName  string
	pid, tid  string
	connectionNumbers
}

// plainConnectionOf reads line into c when it is the plainest connection line: text without
// colour, one NCCL record with its whole process prefix before connectionMarker, a connection
// after it, and no other "NCCL " anywhere (no second record, no version). It returns false for
// any other line, which readLine reads. plain says the line is known to be plain text
// (plainText of its block). c is filled in place: returned by value, it was copied twice.
func (rd *reading) plainConnectionOf(line string, plain bool, c *plainConnection) bool {
	// The marker is found from its "NCCL ", the line's first: a line's many spaces made a
	// search for the marker's leading one the costliest step. An earlier "NCCL " is another
	// record, which readLine reads.
	j := strings.Index(line, "NCCL ")
	// The marker's words are compared as two constants (the compiler compares up to sixteen
	// bytes in loads; a longer or computed one is a call).
	if j < 1 || line[j-1] != ' ' || len(line)-j < len(connectionMarker)-1 ||
		line[j+len("NCCL "):j+len("NCCL INFO ")] != "INFO " || line[j+len("NCCL INFO "):j+len(connectionMarker)-1] != "Channel " {
		return false
	}
	k := j - 1
	rest := line[k+len(connectionMarker):]
	if !plain {
		if ascii, nul, esc, em := scanBytes(line); !ascii || nul || esc || em && resetCode(line) {
			return false
		}
	}
	var ok bool
	if c.host, c.hostName, c.pid, c.tid, ok = processPrefix(line[:k]); !ok {
		return false
	}
	var ct connectionText
	if !ct.read(rest) {
		return false
	}
	// A second record's "NCCL " can stand only in the transport (what comes before it is
	// numbers and separators): looked for only where the transport holds an 'N'.
	if ct.viaHoldsN && holdsNCCL(rest[ct.viaAt:]) {
		return false
	}
	c.msg = k + len(" NCCL INFO ")
	rd.connectionOf(&c.connectionNumbers, ct.recv, ct.channel, ct.from, ct.to, ct.via)
	return true
}

// holdsNCCL is strings.Contains(s, "NCCL ") for a connection's transport, which mostly holds
// no 'N' at all: found from its 'N's, in two thirds of the general search's time.
func holdsNCCL(s string) bool {
	return byteWhere(s, 'N', func(i int) bool { return len(s)-i >= len("NCCL ") && s[i:i+len("NCCL ")] == "NCCL " })
}

// readConnectionLine reads line as readLine would when it is the plainest connection line
// (plainConnectionOf): the record, and false for any other line. FuzzConnectionLineIsReadLine
// holds the two equal.
func (rd *reading) readConnectionLine(line string, cut int64, plain bool) (record, bool) {
	var c plainConnection
	if !rd.plainConnectionOf(line, plain, &c) {
		return record{}, false
	}
	return c.record(line, cut), true
}

// record is c's record, of line.
func (c *plainConnection) record(line string, cut int64) record {
	return record{newLine: true, cut: cut, line: line, nccl: true, host: c.hostName, pid: c.pid, tid: c.tid,
		slot: threadSlot(c.pid, c.tid), level: "INFO", msg: line[c.msg:],
		conn: true, channel: c.channel, from: c.from, to: c.to, printer: c.printer, commRanks: c.commRanks,
		via: c.via.name, where: c.via.where}
}

// connRec is a plain connection line's record in a tenth of a record's size: its strings as
// places in its batch's text, its transport as its place in its batch's reading.placedList.
// Nine lines in ten are one, and a record written by one core and read by another cost more in
// moving it than in reading the line. It holds no pointer: written without the collector's
// barriers, and its slice never scanned.
type connRec struct {
	before            int32  // how many of the batch's records (batch.recs) come before it
	at, end           uint32 // the line, text[at:end]
	host, msg         uint16 // where its host and its message start in the line
	hostLen           uint8  // the host's length; pid and tid follow it, one ':' apart
	pidLen, tidLen    uint8
	slot              uint8
	channel, from, to int32
	printer           int32
	commRanks         int32
	via               uint16 // its transport's index in reading.placedList
	thread            uint16 // its thread's index in batch.threads (noThread: none)
}

// appendCompact appends c, of the line text[at:at+n] and after before records of its batch,
// its thread at slot (threadSlot) and thread (in batch.threads), to conns as a connRec (built
// where it is kept: returned by value, it was copied twice); false when a field is too large
// for one (a prefix longer than any log's, ranks past 2^31, a batch placing 2^16 transports),
// and the record is kept whole.
func (c *plainConnection) appendCompact(conns []connRec, at, n, before, slot int, thread uint16) ([]connRec, bool) {
	// One test per width: an OR of non-negative numbers passes 2^k-1 exactly when one of them does.
	if c.host|c.msg|c.via.id > math.MaxUint16 || len(c.hostName)|len(c.pid)|len(c.tid) > math.MaxUint8 ||
		c.channel|c.from|c.to|c.printer|c.commRanks|before > math.MaxInt32 || uint64(at+n) > math.MaxUint32 {
		return conns, false
	}
	return append(conns, connRec{before: int32(before), at: uint32(at), end: uint32(at + n), host: uint16(c.host), msg: uint16(c.msg),
		hostLen: uint8(len(c.hostName)), pidLen: uint8(len(c.pid)), tidLen: uint8(len(c.tid)), slot: uint8(slot),
		channel: int32(c.channel), from: int32(c.from), to: int32(c.to), printer: int32(c.printer), commRanks: int32(c.commRanks),
		via: uint16(c.via.id), thread: thread}), true
}

// line is c's line in its batch's text.
func (c *connRec) line(text string) string { return text[c.at:c.end] }

// process is c's host, pid and tid in its batch's text.
func (c *connRec) process(text string) (host, pid, tid string) {
	h := int(c.at) + int(c.host)
	p := h + int(c.hostLen) + 1
	t := p + int(c.pidLen) + 1
	return text[h : p-1], text[p : t-1], text[t : t+int(c.tidLen)]
}

// threadKey is c's "host:pid:tid" in its batch's text (the parse's threadKey of its process).
func (c *connRec) threadKey(text string) string {
	h := int(c.at) + int(c.host)
	return text[h : h+int(c.hostLen)+1+int(c.pidLen)+1+int(c.tidLen)]
}

// threadKey is the "host:pid:tid" of c, read from line (the parse's threadKey of its process).
func (c *plainConnection) threadKey(line string) string {
	return line[c.host : c.host+len(c.hostName)+1+len(c.pid)+1+len(c.tid)]
}

// record is c's whole record (what readConnectionLine reads), of its batch's text and its
// transport (placedList[c.via]).
func (c *connRec) record(text string, via *placed) record {
	host, pid, tid := c.process(text)
	whole := plainConnection{host: int(c.host), msg: int(c.msg), hostName: host, pid: pid, tid: tid,
		connectionNumbers: connectionNumbers{channel: int(c.channel), from: int(c.from), to: int(c.to),
			printer: int(c.printer), commRanks: int(c.commRanks), via: via}}
	return whole.record(c.line(text), 0)
}
