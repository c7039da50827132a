package why

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// JSON writes the answer as indented JSON.
func (a *Answer) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // "->" stays readable
	enc.SetIndent("", "  ")
	return enc.Encode(a)
}

// Text writes the answer for reading: the target, the machine's notes,
// then per server the backends grouped by identical verdicts.
func (a *Answer) Text(w io.Writer) error {
	var b strings.Builder
	// The path as resolved and the notes may name what a server made (a
	// symlink's target): spelt (internal/printable), a line each.
	fmt.Fprintf(&b, "%s  (%s)\n", printable.String(a.Resolved), a.Target.Kind)
	for _, n := range a.Notes {
		fmt.Fprintf(&b, "  note: %s\n", printable.String(n))
	}
	if len(a.Servers) == 0 {
		b.WriteString("no server\n")
	}
	for _, s := range a.Servers {
		var on []string
		for _, v := range s.Backends {
			if v.Reachable {
				on = append(on, v.Backend)
			}
		}
		head := "not reachable"
		if len(on) > 0 {
			head = "reachable on " + strings.Join(on, ", ")
		}
		if len(s.Backends) == 0 {
			head = "no backend selected"
		}
		fmt.Fprintf(&b, "\n%s  (%s): %s\n", s.Server, s.Pos, head)
		var order []string
		groups := map[string][]string{}
		for _, v := range s.Backends {
			body := verdictText(v)
			if _, ok := groups[body]; !ok {
				order = append(order, body)
			}
			groups[body] = append(groups[body], v.Backend)
		}
		for _, body := range order {
			fmt.Fprintf(&b, "  %s: %s", strings.Join(groups[body], ", "), body)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func verdictText(v Verdict) string {
	var b strings.Builder
	switch {
	case v.Refused != "":
		b.WriteString("refused: the backend cannot enforce this plan, nothing runs on it\n")
		fmt.Fprintf(&b, "      %s\n", firstLine(v.Refused))
		return b.String()
	case v.Reachable:
		acc := make([]string, len(v.Access))
		for i, x := range v.Access {
			acc[i] = string(x)
		}
		fmt.Fprintf(&b, "%s\n", strings.Join(acc, ", "))
	default:
		b.WriteString("no\n")
	}
	for _, at := range v.At {
		if strings.HasPrefix(at, "/") || strings.HasPrefix(at, "${") {
			at = "at " + at
		}
		fmt.Fprintf(&b, "      %s\n", at)
	}
	for _, g := range v.Via {
		fmt.Fprintf(&b, "      via %-9s %s  (%s)\n", g.Kind, g.Summary, g.Pos)
	}
	for _, s := range v.Stops {
		if s.Pos != (position.Pos{}) {
			fmt.Fprintf(&b, "      - %s: %s  (%s)\n", s.Rule, s.Detail, s.Pos)
		} else {
			fmt.Fprintf(&b, "      - %s: %s\n", s.Rule, s.Detail)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
