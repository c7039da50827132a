// Package printable spells text that someone else wrote so that it shows
// as what it is. A server's error message, a file name in a read-write
// grant or a proxy log line can hold an escape sequence that a terminal
// runs (ESC, CSI, OSC), a carriage return that overwrites what was
// printed before it, a newline that forges another line, or a bidi
// override that shows text in another order than it is: String writes
// each such character as a visible Go escape instead, so what a reviewer
// reads, in a terminal or in a file printed by cat, is what is there.
package printable

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String spells s for a terminal: every character that is not printable
// (control characters — C0 with CR, LF and tab, DEL, C1 —, escape
// sequences' ESC, bidi overrides and isolates, zero-width and other
// format characters, line and paragraph separators, unassigned and
// private-use code points, invalid UTF-8) is written as a Go escape,
// \x1b, \x0d, \u202e, \U000e0041; every other character, and s when it
// has none, is returned as it is. A backslash is not escaped: the output
// is for reading, not for parsing back.
func String(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case r < 0x80 && !unicode.IsPrint(r):
			fmt.Fprintf(&b, "\\x%02x", r)
		case !unicode.IsPrint(r) || r == utf8.RuneError:
			if r > 0xffff {
				fmt.Fprintf(&b, "\\U%08x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// Text spells s as String does, except its own line breaks and tabs,
// which stay: for text mcpolicy composed (an error with its hint, a
// table, a relayed stream's lines) that may hold a name someone else
// chose. Clean text is returned as it is, and spelt text is clean.
func Text(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cols := strings.Split(l, "\t")
		for j, c := range cols {
			cols[j] = String(c)
		}
		lines[i] = strings.Join(cols, "\t")
	}
	return strings.Join(lines, "\n")
}
