package doctor

import (
	"bytes"
	"io"
	"unsafe"
)

// blockReader reads a log a block at a time and finds its lines where they lie: no line is
// copied, but the start of the one a block ends in, which begins the next block. A line over
// maxLine bytes (an application's progress bar, a dumped tensor) is cut to its first maxLine
// bytes, which is where NCCL's own marker stands, and the cut is recorded: nothing is skipped
// silently. A block's buffer is not written while its lines are read, so the parse reads it as
// one string without copying it; it is written again only when the same blockLines is read into
// once more, after everything its lines were read for is done (a batch, once applied), and
// nothing kept may point into it (TestNothingKeptPointsIntoABatch,
// TestReusedBuffersChangeNothing).
type blockReader struct {
	r         io.Reader
	blockSize int
	maxLine   int
	carry     []byte // the start of the line the last block ended in
	skipping  bool   // carry is the first maxLine bytes of a line whose end is not read yet
	skipped   int64  // bytes of that line after them, read and not kept
	skippedCR bool   // the last of them was '\r', which is no content if '\n' follows
	done      bool
}

// blockLines is one block's lines: line i is text[starts[i]:ends[i]], without its end (\n or
// \r\n), and cuts[i] bytes of it were not kept. text views buf.
type blockLines struct {
	text         string
	starts, ends []int
	cuts         []int64
	buf          []byte
}

func newBlockReader(r io.Reader, blockSize, maxLine int) *blockReader {
	return &blockReader{r: r, blockSize: blockSize, maxLine: maxLine}
}

// read reads the next block's lines into b, reusing b's index slices. It says end once the log
// is read (b holds its last lines, if any), and returns the read error that ended it, not
// io.EOF: the lines before the error are in b, the line the error cut is not.
func (br *blockReader) read(b *blockLines) (end bool, err error) {
	b.text, b.starts, b.ends, b.cuts = "", b.starts[:0], b.ends[:0], b.cuts[:0]
	if br.done {
		return true, nil
	}
	// The block's buffer is b's last one, read again: a fresh buffer per block made the
	// garbage collector run every few blocks.
	// It has room for the block and a carried line as long (lines are shorter than blocks).
	buf := b.buf
	if need := len(br.carry) + br.blockSize; cap(buf) < need {
		buf = make([]byte, need+br.blockSize)
	} else if reusing != nil {
		reusing()
	}
	b.buf = buf
	buf = buf[: len(br.carry) : len(br.carry)+br.blockSize]
	copy(buf, br.carry)
	head := len(br.carry)
	var data []byte
	pos := 0 // where the lines not yet found start
	for {
		n, rerr := io.ReadFull(br.r, buf[head:cap(buf)])
		data = buf[:head+n]
		switch rerr {
		case nil:
		case io.EOF, io.ErrUnexpectedEOF:
			br.done = true
		default:
			br.done, err = true, rerr
		}
		if !br.skipping {
			break
		}
		i := bytes.IndexByte(data[head:], '\n')
		if i < 0 {
			br.skipped += int64(n)
			if n > 0 {
				br.skippedCR = data[len(data)-1] == '\r'
			}
			if !br.done {
				continue // the long line goes on: read on into the same space
			}
			if err == nil { // the log ends inside the long line, which has no end to drop
				br.add(b, 0, head, br.skipped)
			}
			br.set(b, data)
			return true, err
		}
		cut := br.skipped + int64(i)
		if i > 0 && data[head+i-1] == '\r' || i == 0 && br.skippedCR {
			cut--
		}
		br.add(b, 0, head, cut)
		br.skipping, br.skipped, pos = false, 0, head+i+1
		break
	}
	// The lines are indexed in a local copy of b's slices, given back once: appending to b's
	// own put a write barrier on each of a block's thousand lines while the collector ran.
	found := blockLines{starts: b.starts, ends: b.ends, cuts: b.cuts}
	for {
		i := bytes.IndexByte(data[pos:], '\n')
		if i < 0 {
			break
		}
		end := pos + i
		if end > pos && data[end-1] == '\r' {
			end--
		}
		br.add(&found, pos, end, 0)
		pos += i + 1
	}
	b.starts, b.ends, b.cuts = found.starts, found.ends, found.cuts
	tail := data[pos:]
	switch {
	case br.done && err == nil && len(tail) > 0: // the last line, without an end
		br.add(b, pos, len(data), 0)
		br.carry = nil
	case br.done:
		br.carry = nil // a read error drops the line it cut
	case len(tail) > br.maxLine:
		br.carry = append(br.carry[:0:0], tail[:br.maxLine]...)
		br.skipping, br.skipped, br.skippedCR = true, int64(len(tail)-br.maxLine), tail[len(tail)-1] == '\r'
	default:
		br.carry = append(br.carry[:0:0], tail...)
	}
	br.set(b, data)
	return br.done, err
}

// reusing, when set (by a test), is told of a buffer about to be read into again.
var reusing func()

// add adds the line data[start:end], of which cut bytes were already dropped, cutting it to
// maxLine.
func (br *blockReader) add(b *blockLines, start, end int, cut int64) {
	if end-start > br.maxLine {
		cut += int64(end - start - br.maxLine)
		end = start + br.maxLine
	}
	b.starts, b.ends, b.cuts = append(b.starts, start), append(b.ends, end), append(b.cuts, cut)
}

// set makes data b's text. data is a buffer of this block alone, never written again.
func (br *blockReader) set(b *blockLines, data []byte) {
	if len(data) > 0 {
		b.text = unsafe.String(unsafe.SliceData(data), len(data))
	}
}
