package launchlog

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"syscall"
	"time"
	"unicode/utf8"
)

// Decision is one decision of the tool relay on the server's stdio pipe
// (runtime/toolrelay): a line of the server's log beside its launch
// records, as the egress proxy's decisions are lines of its log. It names
// the tool, the argument and the rule, never an argument's value.
type Decision struct {
	Time time.Time `json:"time"`
	// Decision is the relay's kind: call-refused, tool-hidden,
	// pin-changed, pin-refused. Its presence is what tells the line from
	// a launch Record.
	Decision string          `json:"decision"`
	Entry    string          `json:"entry"`
	Project  string          `json:"project,omitempty"`
	Server   string          `json:"server"`
	Backend  string          `json:"backend"`
	Plan     string          `json:"plan,omitempty"`
	Tool     string          `json:"tool,omitempty"`
	Arg      string          `json:"arg,omitempty"`
	Field    string          `json:"field,omitempty"` // where the policy says it: servers.NAME.tools.deny[0]
	Reason   string          `json:"reason,omitempty"`
	ID       json.RawMessage `json:"id,omitempty"` // the JSON-RPC id of the refused call
}

// MaxDecisions is how many decisions one launch writes: a client or a
// server that provokes refusals in a loop must not push the launch
// records out of the bounded log (Limit). The rest are counted in the
// launch's record (DecisionsNotLogged).
const MaxDecisions = 64

// maxDecisionField bounds each text of a decision: tool names and ids
// come from the client or the server.
const maxDecisionField = 512

// Decided appends d as a line of the server's log, filled with what the
// launch knows (entry, project, server, backend, plan). Past MaxDecisions
// it only counts. Safe for concurrent use; a log that cannot be written
// is said once on Warn, as for the record.
func (l *Launch) Decided(d Decision) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.decisions >= MaxDecisions {
		l.Rec.DecisionsNotLogged++
		l.mu.Unlock()
		return
	}
	l.decisions++
	r := l.Rec
	secrets, writable, state := l.secrets, l.writable, l.State
	l.mu.Unlock()
	if state == "" || r.Server == "" {
		return
	}
	if d.Time.IsZero() {
		d.Time = time.Now()
	}
	d.Time = d.Time.UTC()
	d.Entry, d.Project, d.Server, d.Backend, d.Plan = r.Entry, r.Project, r.Server, r.Backend, r.Plan
	for _, s := range []*string{&d.Decision, &d.Tool, &d.Arg, &d.Field, &d.Reason} {
		*s = Redact(clip(*s), secrets)
	}
	if len(d.ID) > maxDecisionField || !json.Valid(d.ID) {
		d.ID = nil
	}
	line, err := json.Marshal(&d)
	if err == nil {
		err = Outside(Dir(state), writable)
	}
	if err == nil {
		err = appendLine(Path(state, r.Project, r.Server), append(line, '\n'))
	}
	if err != nil {
		l.warnOnce(err)
	}
}

// clip cuts s to maxDecisionField bytes, on a rune's boundary.
func clip(s string) string {
	if len(s) <= maxDecisionField {
		return s
	}
	s = s[:maxDecisionField]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// ReadDecisions returns the tool relay's decisions in the log at path,
// oldest first (mcpolicy suggest --from-log reads them).
func ReadDecisions(path string) ([]Decision, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Decision
	sc := bufio.NewScanner(io.LimitReader(f, 2*Limit))
	sc.Buffer(make([]byte, 64<<10), Limit)
	for sc.Scan() {
		var d Decision
		if json.Unmarshal(sc.Bytes(), &d) == nil && d.Decision != "" && d.Server != "" {
			out = append(out, d)
		}
	}
	return out, sc.Err()
}
