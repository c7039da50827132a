package toolrelay

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
)

// maxLists bounds the tools/list ids the relay remembers. Past it, an
// answered id is forgotten, oldest first; when none is answered, a new
// tools/list is refused (never forgotten unanswered: its answer would pass
// unfiltered).
const maxLists = 4096

// idKey is the key an id is matched by, loosely: clients disagree on what
// matches (one SDK compares Number(id), so 1, 1.0, "1" and " 0x1 " are one
// id to it), and the relay must filter every answer any client could take
// for a tools/list's, so it keys an id by the number JavaScript's Number()
// reads from it, when it reads one, and by its string or JSON otherwise.
func idKey(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "x:" + string(raw)
	}
	switch v := v.(type) {
	case nil:
		return "n:0"
	case bool:
		if v {
			return "n:1"
		}
		return "n:0"
	case json.Number:
		if k, ok := number(string(v)); ok {
			return k
		}
		return "x:" + string(raw)
	case string:
		s := strings.TrimFunc(v, func(r rune) bool { return unicode.IsSpace(r) || r == '\ufeff' })
		if s == "" {
			return "n:0"
		}
		if k, ok := number(s); ok {
			return k
		}
		return "s:" + v
	default:
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return "x:" + string(raw)
		}
		return "x:" + c.String()
	}
}

// number is the key of a number as Number() reads it (decimal, 0x, 0o,
// 0b, Infinity), false when s is not one.
func number(s string) (string, bool) {
	if len(s) > 2 && s[0] == '0' && strings.ContainsRune("xXoObB", rune(s[1])) {
		n, ok := new(big.Int).SetString(s, 0)
		if !ok || strings.ContainsRune(s, '_') {
			return "", false
		}
		f, _ := new(big.Float).SetInt(n).Float64()
		return numKey(f), true
	}
	if strings.ContainsRune(s, '_') || strings.ContainsAny(s, "xXpP") {
		return "", false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return "", false
		}
	}
	return numKey(f), true
}

// numKey keys a number by its integer part: the MCP Go SDK reads a
// number id as a float64 and matches int64(f), so 1.5 answers the
// request 1 to it. Keying 1.5 as 1 matches more answers than JavaScript
// does, never fewer.
func numKey(f float64) string {
	f = math.Trunc(f)
	if f == 0 {
		f = 0 // -0 is 0
	}
	return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
}

// listEntry is a tools/list the client sent.
type listEntry struct {
	id       json.RawMessage // as the client wrote it, compacted
	cursor   bool            // the request asked for a later page
	answered bool
}

// lists remembers the client's tools/list ids by idKey, answered ones too:
// a second answer to the same id is filtered as the first was.
type lists struct {
	m     map[string]*listEntry
	order []string
}

func newLists() *lists { return &lists{m: map[string]*listEntry{}} }

// add remembers a tools/list; false when maxLists are waiting for answers.
func (l *lists) add(key string, e *listEntry) bool {
	if _, ok := l.m[key]; !ok && len(l.m) >= maxLists && !l.evict() {
		return false
	}
	if _, ok := l.m[key]; !ok {
		l.order = append(l.order, key)
	}
	l.m[key] = e
	return true
}

func (l *lists) evict() bool {
	for i, k := range l.order {
		if e := l.m[k]; e == nil || e.answered {
			delete(l.m, k)
			l.order = append(l.order[:i:i], l.order[i+1:]...)
			return true
		}
	}
	return false
}

// reuse forgets an answered tools/list whose id the client sent again
// with another request: that id's answers are that request's now.
func (l *lists) reuse(key string) {
	if e := l.m[key]; e != nil && e.answered {
		delete(l.m, key)
		for i, k := range l.order {
			if k == key {
				l.order = append(l.order[:i:i], l.order[i+1:]...)
				break
			}
		}
	}
}

func (l *lists) get(key string) *listEntry { return l.m[key] }

// maxPending bounds the ids of forwarded requests the relay remembers
// awaiting an answer; past it, the oldest is forgotten (its answer, if it
// comes, is dropped).
const maxPending = 4096

// pending are the ids of the client's requests the relay forwarded and
// the server has not answered, by idKey: a result with another id answers
// nothing the server was asked, and a client may still take it for the
// answer to a request the relay has not read yet.
type pending struct {
	m     map[string]int // key -> requests forwarded with it
	order []string
}

func (p *pending) add(key string) {
	if p.m == nil {
		p.m = map[string]int{}
	}
	if len(p.order) >= maxPending {
		p.done(p.order[0])
	}
	p.m[key]++
	p.order = append(p.order, key)
}

func (p *pending) has(key string) bool { return p.m[key] > 0 }

// done forgets one request with that key.
func (p *pending) done(key string) {
	if p.m[key] == 0 {
		return
	}
	if p.m[key]--; p.m[key] == 0 {
		delete(p.m, key)
	}
	for i, k := range p.order {
		if k == key {
			if i == 0 { // the oldest, as answers and evictions mostly are: no copy
				p.order = p.order[1:]
			} else {
				p.order = append(p.order[:i], p.order[i+1:]...)
			}
			break
		}
	}
}
