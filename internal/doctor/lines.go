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
	br *bufio.Reader
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64*1024)}
}

// appendNext appends the next line to dst without its end (\n or \r\n), and returns how many
// bytes of it were cut, and io.EOF after the last line: the pipeline's reader copies each line
// once, into its batch.
func (lr *lineReader) appendNext(dst []byte) (_ []byte, cut int64, err error) {
	start := len(dst)
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if err == nil { // the line ends here: its end is not content, kept or cut
			chunk = bytes.TrimSuffix(bytes.TrimSuffix(chunk, []byte("\n")), []byte("\r"))
		}
		if keep := min(len(chunk), maxLine-(len(dst)-start)); keep > 0 {
			dst = append(dst, chunk[:keep]...)
			cut += int64(len(chunk) - keep)
		} else {
			cut += int64(len(chunk))
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(dst) == start && cut == 0:
			return dst, 0, io.EOF
		case err != nil && err != io.EOF:
			return dst[:start], 0, err
		}
		return dst, cut, nil
	}
}
