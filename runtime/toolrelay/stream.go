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
	st := &stream{r: r, cutAt: -1}
	long := fmt.Sprintf("a line over %d MiB", MaxServerLine>>20)
	st.s = scanner{
		// A request of the server's (method first, as SDKs write it) may
		// carry a tools/list's id: its ids are its own. It is cut only if
		// a result or an error follows, which would make it an answer.
		onKey: func(key string, start int64) {
			st.object()
			switch toolpolicy.FoldKey(key) { // as a parser that ignores case reads it
			case "METHOD":
				st.method = true
			case "RESULT", "ERROR":
				st.answer = true
				if st.match != nil {
					st.cut(start, st.match, long)
				}
				if key := toolpolicy.FoldKey(key); key == "RESULT" {
					st.result = true
					if st.unknown && !st.method {
						st.cut(start, nil, unforwarded)
					}
				}
			}
		},
		onID: func(v []byte, over bool, start int64) {
			st.object()
			k := idKey(v)
			switch e := r.lists.get(k); {
			case over:
				st.cut(start, nil, fmt.Sprintf("an id over %d bytes on a line over %d MiB", maxID, MaxServerLine>>20))
			case e != nil && st.method && !st.answer:
				st.match = e
			case e != nil:
				st.cut(start, e, long)
			case !r.pending.has(k) && st.result && !st.method:
				st.cut(start, nil, unforwarded)
			case !r.pending.has(k):
				st.unknown = true
			default:
				st.answered = append(st.answered, k)
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
		} else {
			st.s.feed(p)
		}
		if err != nil {
			return err
		}
		if last {
			break
		}
	}
	if st.cutAt < 0 {
		for _, k := range st.answered {
			r.pending.done(k)
		}
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

	// Of the top-level object being read: a method key, a result or error
	// key, a result key; a tools/list whose id a request carries; an id
	// the relay forwarded no request with.
	method, answer, result bool
	match                  *listEntry
	unknown                bool
	obj                    int      // the object these are of
	answered               []string // forwarded requests' ids answered
}

// unforwarded is why a line is cut at a result for a request the relay
// never forwarded.
const unforwarded = "a result for a request the relay never forwarded, on a long line"

// object starts the flags over when the scanner is in another top-level
// object than they were set in.
func (st *stream) object() {
	if st.obj != st.s.objects {
		st.obj = st.s.objects
		st.method, st.answer, st.result, st.match, st.unknown = false, false, false, nil, false
	}
}

func (st *stream) cut(at int64, e *listEntry, why string) {
	if st.cutAt >= 0 {
		if st.cutFor == nil && e != nil { // cut already: the tools/list still gets its error
			st.cutFor, st.why = e, why
		}
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
			st.s.feed(p[i+1:]) // read on: a tools/list's id may follow
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
