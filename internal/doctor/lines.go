package doctor

import (
	"bufio"
	"bytes"
	"io"
)

// lineReader yields every line of a log, whatever its length. A line over maxLine bytes (an
// application's progress bar, a dumped tensor) is cut to its first maxLine bytes, which is
// where NCCL's own marker stands, and the cut is recorded: nothing is skipped silently.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64*1024)}
}

// next returns the next line without its end (\n or \r\n), how many bytes of it were cut, and
// io.EOF after the last line.
func (lr *lineReader) next() (line []byte, cut int64, err error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == nil { // the line ends here: its end is not content, kept or cut
			chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		}
		if keep := min(len(chunk), maxLine-len(lr.buf)); keep > 0 {
			lr.buf = append(lr.buf, chunk[:keep]...)
			cut += int64(len(chunk) - keep)
		} else {
			cut += int64(len(chunk))
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(lr.buf) == 0 && cut == 0:
			return nil, 0, io.EOF
		case err != nil && err != io.EOF:
			return nil, 0, err
		}
		return lr.buf, cut, nil
	}
}
