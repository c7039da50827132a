package cli

import (
	"bytes"
	"io"

	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// spellText is printable.Text: text mcpolicy composed for a terminal (an
// error, an explanation, a why answer) that may hold a name a server chose,
// its own line breaks and tabs kept. A pass that puts a name into one line
// spells it there first (the compiler's errors, lint's findings), so a
// newline in a name cannot forge a line either.
func spellText(s string) string { return printable.Text(s) }

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
