package doctor

import (
	"io"
	"runtime"
	"strings"
)

// A log is read in batches of lines: one goroutine reads them, every core reads records out of
// them (the costly part: prefixes, expressions, connections), and the parse applies the
// records in the log's order. A fixed number of batches circulate, reused once applied: memory
// stays flat in the log's size, and the garbage collector sees little more than one string
// per line.
const (
	batchLines = 1024
	batchBytes = 512 << 10
	// maxPlaced bounds a batch's cache of transports (a log names a handful).
	maxPlaced = 64
)

// batch is a run of consecutive lines and, once done is closed, their records.
type batch struct {
	data []byte  // the lines, one after another
	ends []int   // where each line ends in data
	cuts []int64 // bytes cut from each line
	err  error   // the read error that ended the log (io.EOF is not one)
	recs []record
	rd   reading
	done chan struct{}
}

// newBatch is an empty batch; its buffers grow to what the log needs and are kept for reuse.
func newBatch() *batch {
	return &batch{rd: reading{placed: map[string][2]string{}, said: map[string][]hit{}, classed: map[string]string{}}}
}

// reset readies an applied batch for the next lines.
func (b *batch) reset() {
	b.data, b.ends, b.cuts, b.recs, b.err = b.data[:0], b.ends[:0], b.cuts[:0], b.recs[:0], nil
	b.rd.hits = b.rd.hits[:0]
	clear(b.rd.said)
	clear(b.rd.classed)
	if len(b.rd.placed) > maxPlaced {
		clear(b.rd.placed)
	}
}

// eachRecord reads r and calls apply with every record, in order. It returns the read error
// that stopped it, nil at the end of the log.
func eachRecord(r io.Reader, apply func(*record)) error {
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
		lr := newLineReader(r)
		for end := false; !end; {
			b := next()
			b.done = make(chan struct{})
			for !end && len(b.ends) < batchLines && len(b.data) < batchBytes {
				data, cut, err := lr.appendNext(b.data)
				switch {
				case err == io.EOF:
					end = true
				case err != nil:
					b.err, end = err, true
				default:
					b.data = data
					b.ends = append(b.ends, len(b.data))
					b.cuts = append(b.cuts, cut)
				}
			}
			inOrder <- b
			todo <- b
		}
	}()
	var err error
	for b := range inOrder {
		<-b.done
		for i := range b.recs {
			apply(&b.recs[i])
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
	// One string for the batch, and one more for each line a fact may be kept from (a host, a
	// warning, a communicator's id), so that what the parse keeps holds that line alone. A plain
	// connection line (nine lines in ten of a job's log) is read from the batch's string: of its
	// record the parse keeps only what it clones (a rank's host in Comm.edge, a pending thread,
	// the transport in reading.connection). Every other line, a connection in any other form
	// among them, is read from its own copy, so that no cache of the batch (reading.said) holds
	// a view.
	text := string(b.data)
	if batchText != nil {
		batchText(text)
	}
	start := 0
	for i, end := range b.ends {
		line := text[start:end]
		start = end
		var ok bool
		if b.recs, ok = b.rd.readConnectionLine(line, b.cuts[i], b.recs); ok {
			continue
		}
		b.recs = b.rd.readLine(strings.Clone(line), b.cuts[i], b.recs)
	}
}

// batchText, when set (by a test), is told each batch's string.
var batchText func(string)
