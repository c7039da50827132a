package findings

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats are the output formats Write knows.
var Formats = []string{"text", "json", "github", "sarif", "markdown"}

// Doc is what a pass prints: its findings and, for SARIF, the rules they
// come from.
type Doc struct {
	Tool, Version string // the SARIF driver's
	// Category is the SARIF run's code scanning category (see Category):
	// each pass sets its own, a --sarif-category flag replaces it.
	Category string
	Rules    []Rule
	Findings []Finding
	// JSON is the value the json format encodes (a pass may wrap its
	// findings with more); nil means the findings.
	JSON any
	// Empty is the text and markdown line for no findings ("" prints nothing).
	Empty, EmptyMarkdown string
	Color                bool // text: ANSI colours on verdicts, for a terminal
}

// Write renders a document in a format, every finding spelt for a
// terminal first (Finding.spelt).
func Write(w io.Writer, d Doc, format string) error {
	if d.Findings != nil {
		fs := make([]Finding, len(d.Findings))
		for i, f := range d.Findings {
			fs[i] = f.spelt()
		}
		d.Findings = fs
	}
	switch format {
	case "text":
		return writeText(w, d)
	case "json":
		v := d.JSON
		if v == nil {
			v = d.Findings
			if d.Findings == nil {
				v = []Finding{}
			}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "github":
		return writeGitHub(w, d)
	case "sarif":
		return writeSARIF(w, d)
	case "markdown":
		return writeMarkdown(w, d)
	}
	return fmt.Errorf("unknown format %q (formats: %s)", format, strings.Join(Formats, ", "))
}

// Check reports whether format is one Write knows.
func Check(format string) error {
	for _, f := range Formats {
		if f == format {
			return nil
		}
	}
	return fmt.Errorf("unknown format %q (formats: %s)", format, strings.Join(Formats, ", "))
}
