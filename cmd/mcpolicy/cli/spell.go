package cli

import (
	"bytes"
	"io"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// spellText spells text mcpolicy composed for a terminal (an error, an
// explanation, a why answer) that may hold a name a server chose — a file
// it made in a read-write grant, a symlink's target: every line's
// characters that are not printable (ESC, BEL, CR, bidi overrides...) are
// written as Go escapes (internal/printable), while the text's own line
// breaks and tabs (a hint's "\n\thint: ", a table's columns) stay. Text
// with none is unchanged, and spelt text is clean: spelling twice changes
// nothing. A pass that puts a name into one line spells it there first
// (the compiler's errors, lint's findings), so a newline in a name cannot
// forge a line either.
func spellText(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cols := strings.Split(l, "\t")
		for j, c := range cols {
			cols[j] = printable.String(c)
		}
		lines[i] = strings.Join(cols, "\t")
	}
	return strings.Join(lines, "\n")
}

// spelling writes what write writes to w, spelt by spellText.
func spelling(w io.Writer, write func(io.Writer) error) error {
	var b bytes.Buffer
	err := write(&b)
	if _, werr := io.WriteString(w, spellText(b.String())); err == nil {
		err = werr
	}
	return err
}

// spell is printable.String: one name, a path, on a line of its own text.
func spell(s string) string { return printable.String(s) }
