package toolrelay

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// maxHeld bounds what a streamed line holds back while it reads a
// top-level key or an id: a key, its id and the space between.
const maxHeld = 4 << 10

// serverLong streams a line over MaxServerLine to the client without
// holding it. When tools/list answers are awaited it reads the line's
// top-level keys as they pass, holding back each key until it knows it is
// not "id", and an id until it knows it answers no tools/list; one that
// does (or a batch, which the relay cannot read streaming) cuts the line
// there: the client gets what came before (an unfinished object, sealed
// with a NUL), a line end, and an error for the tools/list. A line that
// ends inside a value is sealed too (balance).
func (r *relay) serverLong(prefix []byte, lr *lineReader) error {
	r.out.Lock()
	defer r.out.Unlock()
	var b balance
	b.feed(prefix)
	if r.lists.empty() {
		if err := r.writeClient(prefix); err != nil {
			return err
		}
		for {
			p, last, err := lr.chunk()
			b.feed(p)
			if last && b.open() {
				body, end := cutNL(p)
				p = append(append(body[:len(body):len(body)], sealByte...), end...)
				r.logSealed()
			}
			if werr := r.writeClient(p); werr != nil {
				return werr
			}
			if err != nil || last {
				return err
			}
		}
	}

	st := &stream{r: r, cutAt: -1}
	long := fmt.Sprintf("a line over %d MiB", MaxServerLine>>20)
	st.s = scanner{
		// A request of the server's (method first, as SDKs write it) may
		// carry a tools/list's id: its ids are its own. It is cut only if
		// a result or an error follows, which would make it an answer.
		onKey: func(key string, start int64) {
			switch toolpolicy.FoldKey(key) { // as a parser that ignores case reads it
			case "METHOD":
				st.method = true
			case "RESULT", "ERROR":
				st.answer = true
				if st.match != nil {
					st.cut(start, st.match, long)
				}
			}
		},
		onID: func(v []byte, over bool, start int64) {
			if over {
				st.cut(start, nil, fmt.Sprintf("an id over %d bytes on a line over %d MiB", maxID, MaxServerLine>>20))
			} else if e := r.lists.get(idKey(v)); e != nil {
				if st.method && !st.answer {
					st.match = e
				} else {
					st.cut(start, e, long)
				}
			}
		},
		onArray: func(start int64) {
			st.cut(start, nil, fmt.Sprintf("a batch over %d MiB while tools/list answers are awaited", MaxServerLine>>20))
		},
	}
	if err := st.piece(prefix); err != nil {
		return err
	}
	var end []byte
	for {
		p, last, err := lr.chunk()
		b.feed(p)
		if last {
			p, end = cutNL(p)
		}
		if st.cutAt < 0 {
			if perr := st.piece(p); perr != nil {
				return perr
			}
		}
		if err != nil {
			return err
		}
		if last {
			break
		}
	}
	if st.cutAt < 0 {
		if !b.open() {
			return r.writeClient(st.held, end)
		}
		r.logSealed()
		return r.writeClient(st.held, sealByte, end)
	}
	return st.finishCut()
}

type stream struct {
	r      *relay
	s      scanner
	sent   int64  // bytes of the line written to the client
	held   []byte // bytes from sent on, held back
	cutAt  int64  // where the line is cut, -1 while it is not
	cutFor *listEntry
	why    string

	method, answer bool       // the line has a method key, a result or error key
	match          *listEntry // a tools/list whose id a request carries
}

func (st *stream) cut(at int64, e *listEntry, why string) {
	if st.cutAt >= 0 {
		return
	}
	st.cutAt, st.cutFor, st.why = at, e, why
}

// piece scans p, the line's next bytes, writes what need not be held and
// holds the rest (a key or an id being read, maxHeld at most). At a cut it
// holds what comes before the cut and stops.
func (st *stream) piece(p []byte) error {
	base := st.s.off
	for i, b := range p {
		st.s.byte(b)
		st.s.off++
		if st.cutAt >= 0 {
			st.held = append(st.held, p[:i+1]...)
			return nil
		}
	}
	keep := st.s.holdFrom()
	if keep < 0 {
		keep = st.s.off
	}
	if st.s.off-keep > maxHeld {
		st.cut(keep, nil, fmt.Sprintf("a top-level key or id held over %d bytes on a line over %d MiB", maxHeld, MaxServerLine>>20))
		st.held = append(st.held, p...)
		return nil
	}
	// Bytes [sent, base) are held, [base, off) are p; write up to keep.
	if keep <= base {
		st.held = append(st.held, p...)
		if n := int(keep - st.sent); n > 0 {
			if err := st.r.writeClient(st.held[:n]); err != nil {
				return err
			}
			st.held = append(st.held[:0], st.held[n:]...)
			st.sent = keep
		}
		return nil
	}
	if err := st.r.writeClient(st.held, p[:keep-base]); err != nil {
		return err
	}
	st.held = append(st.held[:0], p[keep-base:]...)
	st.sent = keep
	return nil
}

// finishCut writes the line up to the cut, ends it, answers the
// tools/list it answered and logs the cut.
func (st *stream) finishCut() error {
	n := int(st.cutAt - st.sent)
	if n < 0 {
		n = 0
	}
	if n > len(st.held) {
		n = len(st.held)
	}
	if err := st.r.writeClient(st.held[:n], sealByte, nl); err != nil {
		return err
	}
	if st.cutFor != nil {
		return st.r.writeClient(st.r.failClosed([]*listEntry{st.cutFor}, st.why), nl)
	}
	st.r.log(Decision{Kind: KindToolHidden, Field: st.r.section(), Reason: "a server line cut short: " + st.why})
	return nil
}

// holdFrom is the offset from which bytes must be held back: the start of
// the top-level key being read, or of the id member being read; -1 when
// nothing is held.
func (s *scanner) holdFrom() int64 {
	if s.isID || s.depth == 1 && s.state == stInKey && !s.keyLong {
		return s.keyStart
	}
	return -1
}
