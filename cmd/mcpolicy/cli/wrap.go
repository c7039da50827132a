package cli

import (
	"io"
	"strings"
	"unicode/utf8"
)

// wrapText folds each line of s longer than width at spaces; 0 leaves s
// as it is (output that is not a terminal: see terminalWidth). A folded
// line's continuation is indented under its text: after a list marker
// ("- ", "1. "), else under the last column of a table row (a run of two
// spaces), else under its own indentation. A word longer than
// the room (a path, a digest) overflows rather than breaks.
func wrapText(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		text := strings.TrimSuffix(l, "\n")
		if utf8.RuneCountInString(text) <= width {
			b.WriteString(l)
			continue
		}
		wrapLine(&b, text, width)
		if strings.HasSuffix(l, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// wrapLine writes one line folded at width, without its final newline.
func wrapLine(b *strings.Builder, line string, width int) {
	hang := hanging(line)
	if hang > width/2 {
		hang = min(len(line)-len(strings.TrimLeft(line, " ")), width/2)
	}
	first := true
	for {
		if !first {
			line = strings.Repeat(" ", hang) + strings.TrimLeft(line, " ")
		}
		if utf8.RuneCountInString(line) <= width {
			b.WriteString(line)
			return
		}
		cut := breakAt(line, width, len(line)-len(strings.TrimLeft(line, " ")))
		if cut < 0 {
			b.WriteString(line)
			return
		}
		b.WriteString(strings.TrimRight(line[:cut], " "))
		b.WriteByte('\n')
		line, first = line[cut:], false
	}
}

// breakAt is the byte offset of the last space at or before width columns
// (past the indentation, indent), else of the first space after; -1 if
// none.
func breakAt(line string, width, indent int) int {
	last, col := -1, 0
	for i, r := range line {
		if col > width && last >= 0 {
			break
		}
		if r == ' ' && col > indent {
			last = i
			if col >= width {
				break
			}
		}
		col++
	}
	if last < 0 || strings.TrimSpace(line[last:]) == "" {
		return -1
	}
	return last
}

// hanging is where a folded line's continuation starts: under the text
// after a list marker, or under a table row's last column.
func hanging(line string) int {
	rest := strings.TrimLeft(line, " ")
	indent := len(line) - len(rest)
	if strings.HasPrefix(rest, "- ") {
		return indent + 2
	}
	if i := strings.Index(rest, ". "); i > 0 && i <= 3 && strings.Trim(rest[:i], "0123456789") == "" {
		return indent + i + 2
	}
	if i := strings.LastIndex(rest, "  "); i > 0 {
		j := i + len(rest[i:]) - len(strings.TrimLeft(rest[i:], " "))
		if j < len(rest) {
			return indent + j
		}
	}
	return indent
}

// wrapping writes what write writes to w, folded at w's width when w is
// a terminal (terminalWidth), as it is otherwise.
func wrapping(w io.Writer, write func(io.Writer) error) error {
	width, ok := terminalWidth(w)
	if !ok {
		return write(w)
	}
	var b strings.Builder
	err := write(&b)
	if _, werr := io.WriteString(w, wrapText(b.String(), width)); err == nil {
		err = werr
	}
	return err
}
