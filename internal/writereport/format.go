package writereport

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// Names are the server's choice: every path is spelt for a terminal.

// Head is a session's line: its ID, server, backend, when, and counts.
func (r *Report) Head() string {
	s := r.Session
	state := "ended"
	switch {
	case r.Running:
		state = "running"
	case r.Open:
		state = "launcher gone, open until accepted (its container or a daemon may still run)"
	case s.End == 0:
		state = "end unknown"
	}
	c, ch, f := r.Counts()
	line := fmt.Sprintf("%s  %s (%s)  %s, %s  created %d, changed %d, flagged %d", s.ID, printable.String(s.Server), s.Backend,
		time.Unix(0, s.Start).UTC().Format(time.RFC3339), state, c, ch, f)
	if r.Accepted != 0 {
		line += fmt.Sprintf(", accepted %s", time.Unix(0, r.Accepted).UTC().Format(time.RFC3339))
		if n := len(r.Pending()); n > 0 {
			line += fmt.Sprintf(" (%d flagged since)", n)
		}
	}
	if len(r.Incomplete) > 0 {
		line += ", walk INCOMPLETE"
	}
	return line
}

// Line is an entry's line.
func (e Entry) Line() string {
	s := printable.String(e.Path) + ": " + e.Describe()
	if e.Type == "symlink" {
		s += " -> " + printable.String(e.Target)
	}
	if len(e.ReadBy) > 0 {
		s += " (mounted by " + printable.String(strings.Join(e.ReadBy, ", ")) + ")"
	}
	return s
}

// Details are the lines under a session's head: every entry, then why
// the walk is incomplete and whether git's index was read.
func (r *Report) Details() []string {
	var out []string
	for _, e := range r.Entries {
		out = append(out, "  "+e.Line())
	}
	for _, c := range r.Incomplete {
		out = append(out, "  incomplete: "+printable.String(c))
	}
	if r.Untracked != "" {
		out = append(out, "  git's index unread, tracked files listed too: "+printable.String(r.Untracked))
	}
	return out
}

// Problems are check's lines for r: each pending flagged entry and an
// unaccepted incomplete walk, naming the session and the server.
func (r *Report) Problems() []string {
	var out []string
	who := fmt.Sprintf("session %s (server %s, %s)", r.Session.ID, printable.String(r.Session.Server), r.Session.Backend)
	for _, e := range r.Pending() {
		out = append(out, fmt.Sprintf("%s: %s: wrote %s", e.Line(), strings.Join(e.Flags, ", "), who))
	}
	if r.Blind() {
		out = append(out, fmt.Sprintf("%s: the write report is incomplete: %s", who, printable.String(strings.Join(r.Incomplete, "; "))))
	}
	return out
}
