package diff

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Formats are the output formats Write knows.
var Formats = []string{"text", "markdown", "json"}

// Write renders changes; color marks verdicts with ANSI colours (text only,
// for a terminal).
func Write(w io.Writer, cs []Change, format string, color bool) error {
	switch format {
	case "json":
		if cs == nil {
			cs = []Change{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(cs)
	case "text":
		if len(cs) == 0 {
			_, err := fmt.Fprintln(w, "no grant changed")
			return err
		}
		for _, c := range cs {
			at := c.Pos.String()
			if c.Pos.File == "" {
				at = c.Against.String()
			}
			verdict := strings.ToUpper(string(c.Verdict))
			if color {
				code := "32" // green: narrowed
				if c.Verdict == Widened {
					code = "1;31"
					if c.Waived != "" {
						code = "33"
					}
				}
				verdict = "\x1b[" + code + "m" + verdict + "\x1b[0m"
			}
			fmt.Fprintf(w, "%s: %s %s %s: %s", at, c.Server, verdict, c.Kind, c.What)
			if c.Against.File != "" && c.Pos.File != "" {
				fmt.Fprintf(w, " (was %s)", c.Against)
			}
			if c.Waived != "" {
				fmt.Fprintf(w, " [waived: %s]", c.Waived)
			}
			fmt.Fprintln(w)
		}
		return nil
	case "markdown":
		if len(cs) == 0 {
			_, err := fmt.Fprintln(w, "**mcpolicy diff:** no grant changed.")
			return err
		}
		server := ""
		for _, c := range cs {
			if c.Server != server {
				server = c.Server
				fmt.Fprintf(w, "\n### `%s`\n\n| verdict | change | now | before |\n|---|---|---|---|\n", server)
			}
			verdict := "🟢 narrowed"
			if c.Verdict == Widened {
				verdict = "🔴 **widened**"
				if c.Waived != "" {
					verdict = "🟡 widened, waived: " + c.Waived
				}
			}
			fmt.Fprintf(w, "| %s | `%s` %s | %s | %s |\n", verdict, c.Kind, mdEscape(c.What), c.Pos, c.Against)
		}
		return nil
	}
	return fmt.Errorf("unknown format %q (formats: %s)", format, strings.Join(Formats, ", "))
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Widening reports whether any change widens without a waiver.
func Widening(cs []Change) bool {
	for _, c := range cs {
		if c.Verdict == Widened && c.Waived == "" {
			return true
		}
	}
	return false
}
