package toolrelay

import (
	"bufio"
	"errors"
	"io"
)

// lineReader reads newline-delimited messages, holding a line only up to
// max bytes: a longer one is handed on in chunks of the reader's buffer.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next reads the next line, its '\n' included when it has one. over is
// set when the line is longer than max: line is then its first max bytes
// or more, and chunk reads the rest. At the end of the input a last line
// without '\n' is returned first, then io.EOF.
func (l *lineReader) next() (line []byte, over bool, err error) {
	if cap(l.buf) > 1<<20 { // do not keep a big line's buffer for the small ones
		l.buf = nil
	}
	l.buf = l.buf[:0]
	for {
		p, err := l.br.ReadSlice('\n')
		l.buf = append(l.buf, p...)
		switch {
		case err == nil:
			return l.buf, false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(l.buf) >= l.max {
				return l.buf, true, nil
			}
		case errors.Is(err, io.EOF) && len(l.buf) > 0:
			return l.buf, false, nil
		default:
			return nil, false, err
		}
	}
}

// chunk reads the next piece of a line next called over; last is set on
// the piece that ends it (with its '\n', or at the end of the input). The
// piece is valid until the next read.
func (l *lineReader) chunk() (p []byte, last bool, err error) {
	p, err = l.br.ReadSlice('\n')
	switch {
	case err == nil:
		return p, true, nil
	case errors.Is(err, bufio.ErrBufferFull):
		return p, false, nil
	case errors.Is(err, io.EOF):
		return p, true, nil
	default:
		return p, true, err
	}
}
