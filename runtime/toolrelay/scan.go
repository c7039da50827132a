package toolrelay

import (
	"bytes"
	"encoding/json"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// Bounds of what the scanner keeps of a member: a key longer than
// maxKey is none the relay reads, and an id longer than maxID is none a
// client sent (the relay refuses tools/list requests with longer ids).
const (
	maxKey = 64
	maxID  = 1024
)

// scanner reads a line's top-level objects as they stream by, byte by
// byte, without holding them: it reports each top-level member's key when
// the key ends (with the offset of its opening quote) and the value of an
// "id" member when the member ends, and stops at a top-level array (a
// batch), which it reports. It does not validate: on a line that is not
// JSON it reports what a lenient parser could have read, and the relay
// treats every id it reports as an id.
type scanner struct {
	off     int64 // offset of the next byte in the line
	objects int   // top-level objects begun
	array   bool  // a top-level array began: the scanner stops there
	depth   int
	inStr   bool
	esc     bool

	state    int   // what is expected at depth 1 of a top-level object
	keyStart int64 // offset of the current member's key
	key      []byte
	keyLong  bool
	isID     bool
	val      []byte
	valLong  bool

	// onKey is called when a top-level key ends; onID when an "id"
	// member's value ends (over: longer than maxID).
	onKey   func(key string, start int64)
	onID    func(val []byte, over bool, start int64)
	onArray func(start int64)
}

const (
	stKey   = iota // before a key (or the closing brace)
	stInKey        // inside a key's string
	stColon        // after a key, before ':'
	stValue        // inside a member's value
)

func (s *scanner) feed(p []byte) {
	for _, b := range p {
		s.byte(b)
		s.off++
	}
}

func (s *scanner) byte(b byte) {
	if s.array {
		return
	}
	if s.depth == 0 {
		// Between values: a line may hold more than one, and a client
		// reading values rather than lines would take each.
		switch {
		case s.inStr && s.esc:
			s.esc = false
		case s.inStr && b == '\\':
			s.esc = true
		case s.inStr:
			s.inStr = b != '"'
		case b == '"':
			s.inStr = true
		case b == '{':
			s.depth, s.state, s.objects = 1, stKey, s.objects+1
		case b == '[':
			s.array = true
			if s.onArray != nil {
				s.onArray(s.off)
			}
		}
		return
	}
	if s.inStr {
		if s.state == stInKey && s.depth == 1 {
			s.keyByte(b)
		} else if s.isID {
			s.valByte(b)
		}
		switch {
		case s.esc:
			s.esc = false
		case b == '\\':
			s.esc = true
		case b == '"':
			s.inStr = false
			if s.state == stInKey && s.depth == 1 {
				s.keyEnd()
			}
		}
		return
	}
	if s.depth == 1 {
		switch s.state {
		case stKey:
			switch b {
			case '"':
				s.inStr, s.state = true, stInKey
				s.keyStart, s.key, s.keyLong = s.off, s.key[:0], false
			case '}':
				s.depth = 0
			}
			return
		case stColon:
			if b == ':' {
				s.state = stValue
				s.val, s.valLong = s.val[:0], false
			}
			return
		case stValue:
			switch b {
			case ',':
				s.memberEnd()
				s.state = stKey
				return
			case '}':
				s.memberEnd()
				s.depth = 0
				return
			}
		}
	}
	if s.isID {
		s.valByte(b)
	}
	switch b {
	case '"':
		s.inStr = true
	case '{', '[':
		s.depth++
	case '}', ']':
		if s.depth > 1 {
			s.depth--
		}
	}
}

func (s *scanner) keyByte(b byte) {
	if len(s.key) < maxKey+2 {
		s.key = append(s.key, b)
	} else {
		s.keyLong = true
	}
}

func (s *scanner) keyEnd() {
	s.state, s.isID = stColon, false
	if s.keyLong {
		return
	}
	var k string
	raw := append([]byte{'"'}, s.key...) // the closing quote is in key
	if json.Unmarshal(raw, &k) != nil {
		return
	}
	s.isID = toolpolicy.FoldKey(k) == "ID" // "ID" is "id" to a parser that ignores case
	if s.onKey != nil {
		s.onKey(k, s.keyStart)
	}
}

func (s *scanner) valByte(b byte) {
	if len(s.val) < maxID {
		s.val = append(s.val, b)
	} else {
		s.valLong = true
	}
}

func (s *scanner) memberEnd() {
	if s.isID && s.onID != nil {
		s.onID(bytes.TrimFunc(s.val, func(r rune) bool { return r < 0x80 && isSpace(byte(r)) }), s.valLong, s.keyStart)
	}
	s.isID = false
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// balance follows a line's nesting, strings included, to tell whether
// the line ends inside a JSON value. A client that reads JSON values
// from the stream rather than lines (the MCP Go SDK's) would join such a
// line to the next, and a tools/list answer whose id comes on a later
// line than its start would pass the relay unread: so such a line is
// sealed (see seal).
type balance struct {
	depth      int
	inStr, esc bool
}

func (b *balance) feed(p []byte) {
	for _, c := range p {
		switch {
		case b.inStr && b.esc:
			b.esc = false
		case b.inStr && c == '\\':
			b.esc = true
		case b.inStr:
			b.inStr = c != '"'
		case c == '"':
			b.inStr = true
		case c == '{' || c == '[':
			b.depth++
		case (c == '}' || c == ']') && b.depth > 0:
			b.depth--
		}
	}
}

func (b *balance) open() bool { return b.depth > 0 || b.inStr }

// sealByte ends a line that ends inside a value: a NUL is invalid in
// JSON in and out of strings, so no reader completes the value with
// what comes next.
var sealByte = []byte{0}

// cutNL splits a line's trailing newline from it.
func cutNL(line []byte) (body, end []byte) {
	if n := len(line); n > 0 && line[n-1] == '\n' {
		return line[:n-1], line[n-1:]
	}
	return line, nil
}
