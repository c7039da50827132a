package findings

import (
	"fmt"
	"io"
	"strings"
)

// writeText prints one line a finding: a rule's as
//
//	file:line:col: RULE level message (waived: reason)
//
// and a change's, with the server first since a reviewer reads by server,
// as
//
//	file:line:col: server WIDENED KIND: message (was old:line:col) [waived: reason]
func writeText(w io.Writer, d Doc) error {
	if len(d.Findings) == 0 && d.Empty != "" {
		_, err := fmt.Fprintln(w, d.Empty)
		return err
	}
	for _, f := range d.Findings {
		if f.Verdict == "" {
			waived := ""
			if f.Waived != "" {
				waived = " (waived: " + f.Waived + ")"
			}
			fmt.Fprintf(w, "%s: %s %s %s%s\n", f.Pos, f.Rule, f.Level, f.Message, waived)
			continue
		}
		verdict := strings.ToUpper(f.Verdict)
		if d.Color {
			code := "32" // green: narrowed
			if f.Verdict == Widened {
				code = "1;31"
				if f.Waived != "" {
					code = "33"
				}
			}
			verdict = "\x1b[" + code + "m" + verdict + "\x1b[0m"
		}
		fmt.Fprintf(w, "%s: %s %s %s: %s", f.At(), f.Server, verdict, f.Rule, f.Message)
		if f.Against.File != "" && f.Pos.File != "" {
			fmt.Fprintf(w, " (was %s)", f.Against)
		}
		if f.Waived != "" {
			fmt.Fprintf(w, " [waived: %s]", f.Waived)
		}
		fmt.Fprintln(w)
	}
	return nil
}
