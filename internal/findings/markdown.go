package findings

import (
	"fmt"
	"io"
	"strings"
)

// writeMarkdown prints a table per server, for a pull request comment:
// changes as verdict, change, now, before; rule findings as severity,
// rule, where, finding.
func writeMarkdown(w io.Writer, d Doc) error {
	if len(d.Findings) == 0 {
		if d.EmptyMarkdown != "" {
			_, err := fmt.Fprintln(w, d.EmptyMarkdown)
			return err
		}
		return nil
	}
	server, header := "", ""
	for _, f := range d.Findings {
		h := "| severity | rule | where | finding |\n|---|---|---|---|"
		if f.Verdict != "" {
			h = "| verdict | change | now | before |\n|---|---|---|---|"
		}
		switch {
		case header == "" || f.Server != server:
			title := "`" + f.Server + "`"
			if f.Server == "" {
				title = "files"
			}
			fmt.Fprintf(w, "\n### %s\n\n%s\n", title, h)
		case h != header: // a server with changes and findings: a table each
			fmt.Fprintf(w, "\n%s\n", h)
		}
		server, header = f.Server, h
		if f.Verdict != "" {
			verdict := "🟢 narrowed"
			if f.Verdict == Widened {
				verdict = "🔴 **widened**"
				if f.Waived != "" {
					verdict = "🟡 widened, waived: " + f.Waived
				}
			}
			fmt.Fprintf(w, "| %s | `%s` %s | %s | %s |\n", verdict, f.Rule, mdEscape(f.Message), f.Pos, f.Against)
			continue
		}
		level := f.Level
		if f.Waived != "" {
			level += ", waived: " + mdEscape(f.Waived)
		}
		fmt.Fprintf(w, "| %s | `%s` | %s | %s |\n", level, f.Rule, f.Pos, mdEscape(f.Message))
	}
	return nil
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
