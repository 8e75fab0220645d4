package doctor

import (
	"bytes"
	"io"
	"strings"
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

// blockLines is one block's lines, found by whoever reads them (lineAt): the reader only
// finds where the block's last whole line ends, so that the block's lines are split where they
// are read, by every core, not by the one reading the file. A line over maxLine bytes is cut
// to its first maxLine bytes. The block may start with a lead line, text[:leadEnd], leadCut
// bytes of which were not kept: the start of a line longer than a block, whose end this block
// holds (text[leadEnd:from] is the rest of it, dropped). The lines after it start at from;
// text ends with the last one's end, or with the log's last line, which has none. text views
// buf.
type blockLines struct {
	text    string
	leadEnd int // a lead line's end (0: none)
	leadCut int64
	from    int // where the block's other lines start
	maxLine int
	buf     []byte
}

func newBlockReader(r io.Reader, blockSize, maxLine int) *blockReader {
	return &blockReader{r: r, blockSize: blockSize, maxLine: maxLine}
}

// read reads the next block into b, reusing b's buffer. It says end once the log is read (b
// holds its last lines, if any), and returns the read error that ended it, not io.EOF: the
// lines before the error are in b, the line the error cut is not.
func (br *blockReader) read(b *blockLines) (end bool, err error) {
	b.text, b.leadEnd, b.leadCut, b.from, b.maxLine = "", 0, 0, 0, br.maxLine
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
				b.leadEnd, b.leadCut = head, br.skipped
			}
			br.set(b, data)
			b.from = len(b.text)
			return true, err
		}
		cut := br.skipped + int64(i)
		if i > 0 && data[head+i-1] == '\r' || i == 0 && br.skippedCR {
			cut--
		}
		b.leadEnd, b.leadCut = head, cut
		br.skipping, br.skipped, pos = false, 0, head+i+1
		break
	}
	b.from = pos
	// The block's lines end at its last '\n'; what follows it is the start of the next block's
	// first line, carried.
	if i := bytes.LastIndexByte(data[pos:], '\n'); i >= 0 {
		pos += i + 1
	}
	tail := data[pos:]
	switch {
	case br.done && err == nil && len(tail) > 0: // the last line, without an end
		pos = len(data)
		br.carry = nil
	case br.done:
		br.carry = nil // a read error drops the line it cut
	case len(tail) > br.maxLine:
		br.carry = append(br.carry[:0:0], tail[:br.maxLine]...)
		br.skipping, br.skipped, br.skippedCR = true, int64(len(tail)-br.maxLine), tail[len(tail)-1] == '\r'
	default:
		br.carry = append(br.carry[:0:0], tail...)
	}
	br.set(b, data[:pos])
	return br.done, err
}

// reusing, when set (by a test), is told of a buffer about to be read into again.
var reusing func()

// lineAt is the line of the block that starts at text[p:] (p at or after from): where it
// ends, where the next starts, and the bytes cut from it (it is cut to maxLine); ok false past
// the last. A line ends before its "\n" or "\r\n"; the log's last line, at the end of text,
// may have neither.
func (b *blockLines) lineAt(p int) (end, next int, cut int64, ok bool) {
	if p >= len(b.text) {
		return 0, 0, 0, false
	}
	i := strings.IndexByte(b.text[p:], '\n')
	if i < 0 {
		end, next = len(b.text), len(b.text)
	} else {
		end, next = p+i, p+i+1
		if end > p && b.text[end-1] == '\r' {
			end--
		}
	}
	if end-p > b.maxLine {
		cut, end = int64(end-p-b.maxLine), p+b.maxLine
	}
	return end, next, cut, true
}

// set makes data b's text. data is a buffer of this block alone, never written again.
func (br *blockReader) set(b *blockLines, data []byte) {
	if len(data) > 0 {
		b.text = unsafe.String(unsafe.SliceData(data), len(data))
	}
}
