package doctor

import (
	"io"
	"runtime"
	"strings"
)

// A log is read in batches of lines: one goroutine reads them, a block at a time, every core
// reads records out of them (the costly part: prefixes, expressions, connections), and the
// parse applies the records in the log's order. A fixed number of batches circulate, reused
// once applied, each with its buffer: memory stays flat in the log's size, and the garbage
// collector sees little more than the lines read from copies of their own.
const (
	maxPlaced = 64  // bounds a batch's cache of transports (a log names a handful)
	maxSaid   = 512 // bounds its caches of messages (reading.said, reading.classed)
	// maxSaidBytes is the longest message those caches keep (an announcement is a line's words).
	maxSaidBytes = 1 << 10
)

// batchBytes is the size of the block a batch reads (a variable: tests move the boundaries).
var batchBytes = 128 << 10

// batch is a block's lines and, once done is closed, their records.
type batch struct {
	blockLines
	err   error // the read error that ended the log (io.EOF is not one)
	recs  []record
	conns []connRec // the plain connection lines' records, in the log's order among recs
	rd    reading
	// threads are the threads of the batch's small records (their "host:pid:tid", views of
	// text), found by threadAt: the index plus one of the thread at each place (0: none),
	// placed from its threadSlot. answers are what the parse answered each (applyConn).
	threads  []string
	threadAt [2 * maxBatchThreads]uint16
	answers  []threadAnswer
	done     chan struct{}
}

// newBatch is an empty batch; its buffers grow to what the log needs and are kept for reuse.
func newBatch() *batch {
	return &batch{rd: reading{placed: map[string]*placed{}, said: map[string]readMessageResult{}, classed: map[string]string{}}}
}

// reset readies an applied batch for the next lines.
func (b *batch) reset() {
	b.text, b.recs, b.conns, b.err = "", b.recs[:0], b.conns[:0], nil
	clear(b.threads) // views of the text
	b.threads, b.threadAt = b.threads[:0], [len(b.threadAt)]uint16{}
	b.rd.hits = b.rd.hits[:0]
	if len(b.rd.said) > maxSaid {
		clear(b.rd.said)
	}
	if len(b.rd.classed) > maxSaid {
		clear(b.rd.classed)
	}
	if len(b.rd.placed) > maxPlaced {
		// Forgotten together: a transport is placed again with a new index.
		clear(b.rd.placed)
		clear(b.rd.placedList)
		b.rd.placedList = b.rd.placedList[:0]
		b.rd.lastPlaced, b.rd.placedAt = nil, [len(b.rd.placedAt)]*placed{}
	}
}

// eachRecord reads r and calls apply with every record, in order, or applyConn with a plain
// connection line's small record, its batch's text, its transport and its thread's answer in
// the batch (nil: none kept). It returns the read error that stopped it, nil at the end of the
// log.
func eachRecord(r io.Reader, apply func(*record), applyConn func(*connRec, string, *placed, *threadAnswer)) error {
	workers := runtime.GOMAXPROCS(0)
	inFlight := 3*workers + 1 // being read, waiting for a worker, read and waiting to be applied
	free := make(chan *batch, inFlight)
	made := 0
	// next is a batch to fill: an applied one, or a new one while fewer than inFlight exist (a
	// short log needs one).
	next := func() *batch {
		select {
		case b := <-free:
			return b
		default:
		}
		if made < inFlight {
			made++
			return newBatch()
		}
		return <-free
	}
	todo := make(chan *batch, inFlight)
	inOrder := make(chan *batch, inFlight)
	for range workers {
		go func() {
			for b := range todo {
				b.read()
			}
		}()
	}
	go func() {
		defer close(todo)
		defer close(inOrder)
		br := newBlockReader(r, batchBytes, maxLine)
		for end := false; !end; {
			b := next()
			b.done = make(chan struct{})
			end, b.err = br.read(&b.blockLines)
			inOrder <- b
			todo <- b
		}
	}()
	var err error
	for b := range inOrder {
		<-b.done
		next := 0 // of b.recs
		b.answers = append(b.answers[:0], make([]threadAnswer, len(b.threads))...)
		for i := range b.conns {
			c := &b.conns[i]
			for ; next < int(c.before); next++ {
				apply(&b.recs[next])
			}
			var answer *threadAnswer
			if c.thread != noThread {
				answer = &b.answers[c.thread]
			}
			applyConn(c, b.text, b.rd.placedList[c.via], answer)
		}
		clear(b.answers) // communicators, kept by nothing else once applied
		for ; next < len(b.recs); next++ {
			apply(&b.recs[next])
		}
		if b.err != nil {
			err = b.err
		}
		b.reset()
		free <- b
	}
	return err
}

// read turns the batch's lines into records.
func (b *batch) read() {
	defer close(b.done)
	// The block is one string. A plain connection line (nine lines in ten of a job's log) is
	// read from it: of its record the parse keeps only what it clones (a rank's host in
	// Comm.edge, a thread in currentComms or pending, the transport in reading.connection, the
	// line after "Last error:"), as the buffer is read into again. Every other line, a
	// connection in any other form among them, is read from its own copy, so that what the
	// parse keeps of it (a host, a warning, a communicator's id) holds that line alone, and no
	// cache of a worker's (reading.said) holds a view of the buffer.
	if batchText != nil {
		batchText(b.text)
	}
	plain := plainText(b.text) // a line of a plain block needs no scan of its own
	var c plainConnection      // on the stack: its strings are written for every line
	if b.leadEnd > 0 {
		b.readLine(0, b.leadEnd, b.leadCut, plain, &c)
	}
	for start := b.from; ; {
		end, next, cut, ok := b.lineAt(start)
		if !ok {
			return
		}
		b.readLine(start, end, cut, plain, &c)
		start = next
	}
}

// readLine reads the line text[start:end], cut bytes of which were not kept, into the batch's
// records; c is where a plain connection line is read.
func (b *batch) readLine(start, end int, cut int64, plain bool, c *plainConnection) {
	line := b.text[start:end]
	if b.rd.plainConnectionOf(line, plain, c) {
		if cut == 0 && compactConnections {
			slot := threadSlot(c.pid, c.tid)
			var ok bool
			if b.conns, ok = c.appendCompact(b.conns, start, len(line), len(b.recs), slot, b.threadNo(c.threadKey(line), slot)); ok {
				return
			}
		}
		b.recs = append(b.recs, c.record(line, cut))
		return
	}
	b.recs = b.rd.readLine(strings.Clone(line), cut, plain, b.recs)
}

// compactConnections says whether plain connection lines are read into connRecs (a test
// turns it off to hold them to whole records).
var compactConnections = true

// batchText, when set (by a test), is told each batch's string.
var batchText func(string)
