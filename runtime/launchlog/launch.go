package launchlog

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Launch is one launch on its way to its record: the launcher fills in
// what it learns (Set, Secrets, Writable) and ends it once, refused or
// with the server's end.
type Launch struct {
	Rec   Record
	State string // the state folder; "": nothing is logged
	// Stderr keeps the server's last stderr lines (Tee writes to it).
	Stderr Tail
	// Warn is told, once, that the log could not be written.
	Warn io.Writer

	mu        sync.Mutex
	secrets   []string
	writable  []string
	done      bool
	decisions int  // the tool relay's decisions logged (Decided)
	warned    bool // Warn was told the log cannot be written
}

// New starts the record of a launch by entry (mcpolicy-launch, run,
// exec) with the state folder getenv names (writereport.StateDir's rule:
// $XDG_STATE_HOME/mcpolicy, else $HOME/.local/state/mcpolicy).
func New(entry string, getenv func(string) string, warn io.Writer) *Launch {
	return &Launch{Rec: Record{Entry: entry}, State: StateDir(getenv), Warn: warn}
}

// StateDir is mcpolicy's state folder: $XDG_STATE_HOME/mcpolicy (an
// absolute one), else $HOME/.local/state/mcpolicy; "" when neither is set.
// The launcher's session records use the same rule.
func StateDir(getenv func(string) string) string {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "mcpolicy")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "mcpolicy")
	}
	return ""
}

// Set names the launch as far as it is known; empty arguments keep what
// was set before.
func (l *Launch) Set(project, server, backend, plan string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range []struct {
		dst *string
		v   string
	}{{&l.Rec.Project, project}, {&l.Rec.Server, server}, {&l.Rec.Backend, backend}, {&l.Rec.Plan, plan}} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
}

// Secrets adds the values of the granted names in environ: no record
// holds a line with one of them.
func (l *Launch) Secrets(environ, names []string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.secrets = append(l.secrets, Secrets(environ, names)...)
}

// Writable adds read-write grants: a log folder inside one is not
// written.
func (l *Launch) Writable(paths []string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writable = append(l.writable, paths...)
}

// Refused records that nothing started, with the launcher's message and
// what would fix it.
func (l *Launch) Refused(msg, fix string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.Rec.Refused, l.Rec.Fix = msg, fix
	l.mu.Unlock()
	l.write()
}

// Ended records the server's end: its exit code, or the signal that
// ended it (name non-empty), and its last stderr lines.
func (l *Launch) Ended(code int, signal string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if signal != "" {
		l.Rec.Signal = signal
	} else {
		l.Rec.Exit = &code
	}
	l.mu.Unlock()
	l.write()
}

// Unseen records a start whose end the launcher cannot see (it becomes
// the server), saying why.
func (l *Launch) Unseen(note string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.Rec.Note = note
	l.mu.Unlock()
	l.write()
}

// write appends the record, once. A failure is said on Warn and nothing
// else: the log is never a reason not to run the server.
func (l *Launch) write() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || l.State == "" || l.Rec.Server == "" {
		return
	}
	l.done = true
	r := l.Rec
	r.Time = time.Now().UTC()
	r.Refused = Redact(r.Refused, l.secrets)
	r.Fix = Redact(r.Fix, l.secrets)
	r.Stderr = RedactLines(l.Stderr.Lines(), l.secrets)
	err := Outside(Dir(l.State), l.writable)
	if err == nil {
		err = Append(Path(l.State, r.Project, r.Server), &r)
	}
	if err != nil && l.Warn != nil && !l.warned {
		l.warned = true
		fmt.Fprintf(l.Warn, "mcpolicy: this launch is not logged: %s\n", strings.TrimSpace(err.Error()))
	}
}

// warnOnce says on Warn, the first time, that the log cannot be written.
func (l *Launch) warnOnce(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.Warn != nil && !l.warned {
		l.warned = true
		fmt.Fprintf(l.Warn, "mcpolicy: this launch is not logged: %s\n", strings.TrimSpace(err.Error()))
	}
}

// Refuse logs err as the launch's refusal, with fix, and returns err.
func (l *Launch) Refuse(err error, fix string) error {
	if err != nil {
		l.Refused(err.Error(), fix)
	}
	return err
}

// Carried is a launch's record as far as it is known, for a launcher that
// hands the launch on to another process (`mcpolicy exec` execs the small
// launcher, which then stays beside the server in its place).
type Carried struct {
	Rec      Record   `json:"rec"`
	State    string   `json:"state"`
	Secrets  []string `json:"secrets,omitempty"`
	Writable []string `json:"writable,omitempty"`
}

// Carry is what Resume needs to go on with l in another process.
func (l *Launch) Carry() Carried {
	l.mu.Lock()
	defer l.mu.Unlock()
	return Carried{Rec: l.Rec, State: l.State, Secrets: append([]string{}, l.secrets...), Writable: append([]string{}, l.writable...)}
}

// Resume is the launch Carry carried, warning on warn.
func Resume(c Carried, warn io.Writer) *Launch {
	return &Launch{Rec: c.Rec, State: c.State, Warn: warn, secrets: c.Secrets, writable: c.Writable}
}
