package writereport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/gitindex"
)

// Report is what one session wrote, as its grants show it now.
type Report struct {
	Session Session
	// Running: the session's process still runs (its window is open).
	Running bool
	// Accepted is when a reviewer accepted the session (0: not).
	Accepted int64
	Entries  []Entry
	// Incomplete says why the walk could not see everything.
	Incomplete []string
	// Untracked says git's index could not be read: nothing was left out
	// as tracked.
	Untracked string
}

// Counts are the report's created, changed and flagged entries.
func (r *Report) Counts() (created, changed, flagged int) {
	for _, e := range r.Entries {
		if e.Created {
			created++
		} else {
			changed++
		}
		if len(e.Flags) > 0 {
			flagged++
		}
	}
	return
}

// Pending are the flagged entries a reviewer has not accepted: changed
// after the acceptance (a session that still ran then), or in a session
// never accepted. A flagged file removed since is no longer listed.
func (r *Report) Pending() []Entry {
	var out []Entry
	for _, e := range r.Entries {
		if len(e.Flags) > 0 && (r.Accepted == 0 || e.Ctime >= r.Accepted) {
			out = append(out, e)
		}
	}
	return out
}

// Blind: the walk was incomplete and the session is not accepted.
func (r *Report) Blind() bool { return len(r.Incomplete) > 0 && r.Accepted == 0 }

// Options select the sessions to report.
type Options struct {
	State   string // StateDir
	Project string // the project's root
	Last    int    // the newest N sessions (0: all kept)
	Limits  Limits // zero: DefaultLimits
	// Servers names an engine session's server by its plan's hash (the
	// container's label is all the launcher has).
	Servers map[string]string
}

// Reports computes the report of each of the project's recorded
// sessions, newest first. A session found ended for the first time is
// marked so (its window closes now).
func Reports(o Options) ([]*Report, error) {
	if o.Limits == (Limits{}) {
		o.Limits = DefaultLimits
	}
	root := filepath.Clean(o.Project)
	dir := projectDir(o.State, root)
	all := ids(dir)
	if o.Last > 0 && len(all) > o.Last {
		all = all[len(all)-o.Last:]
	}
	var tracked map[string]bool
	untracked := ""
	if idx, err := gitindex.Of(root); err == nil {
		if tracked, err = gitindex.Read(idx); err != nil {
			untracked = err.Error()
		}
	} else if !os.IsNotExist(err) {
		untracked = err.Error()
	}
	var out []*Report
	for i := len(all) - 1; i >= 0; i-- {
		r, err := report(dir, all[i], root, tracked, o.Limits)
		if err != nil {
			return out, err
		}
		r.Untracked = untracked
		if n, ok := o.Servers[r.Session.Server]; ok {
			r.Session.Server = n
		}
		out = append(out, r)
	}
	return out, nil
}

func report(dir, id, root string, tracked map[string]bool, lim Limits) (*Report, error) {
	rec := filepath.Join(dir, id+".json")
	b, err := os.ReadFile(rec)
	if err != nil {
		return nil, err
	}
	r := &Report{}
	if err := json.Unmarshal(b, &r.Session); err != nil {
		return nil, fmt.Errorf("%s: %v", rec, err)
	}
	if filepath.Clean(r.Session.Project) != root {
		return nil, fmt.Errorf("%s: recorded for %s, not %s", rec, r.Session.Project, root)
	}
	if r.Session.End == 0 {
		if r.Session.End, err = readStamp(filepath.Join(dir, id+".end")); err != nil {
			return nil, err
		}
	}
	if r.Session.End == 0 {
		if r.Running = alive(&r.Session); !r.Running {
			// Gone: nothing it started writes after this.
			now := time.Now()
			MarkEnd(rec, now)
			r.Session.End = now.UnixNano()
		}
	}
	if r.Accepted, err = readStamp(filepath.Join(dir, id+".accepted")); err != nil {
		return nil, err
	}
	win := window{from: r.Session.Start - int64(Slack)}
	if r.Session.End != 0 {
		win.to = r.Session.End + int64(Slack)
	}
	w := &walker{win: win, root: root, tracked: tracked, lim: lim, deadline: time.Now().Add(lim.Time)}
	for _, g := range outermost(r.Session.Writable) {
		w.walk(g)
	}
	r.Entries, r.Incomplete = w.out, w.cut
	sort.Slice(r.Entries, func(i, j int) bool { return r.Entries[i].Path < r.Entries[j].Path })
	return r, nil
}

// outermost drops a grant inside another: it is walked once.
func outermost(grants []string) []string {
	var out []string
	for _, g := range grants {
		g = filepath.Clean(g)
		inner := false
		for _, h := range grants {
			if h = filepath.Clean(h); h != g && within(g, h) {
				inner = true
			}
		}
		if !inner && !contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Accept marks a session (its ID, or "all") of the project reviewed:
// what it wrote until now no longer fails check. It returns the IDs
// accepted.
func Accept(state, project, id string) ([]string, error) {
	dir := projectDir(state, filepath.Clean(project))
	all := ids(dir)
	var pick []string
	switch {
	case id == "all":
		pick = all
	case contains(all, id):
		pick = []string{id}
	default:
		return nil, fmt.Errorf("no session %q recorded for %s (`mcpolicy sessions` lists them)", id, project)
	}
	now := strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
	var done []string
	for _, s := range pick {
		p := filepath.Join(dir, s+".accepted")
		os.Remove(p) // a new review replaces the old one
		if err := writeNew(p, []byte(now)); err != nil {
			return done, err
		}
		done = append(done, s)
	}
	return done, nil
}

// Describe is an entry's one-line account (its path raw: the caller
// spells it for a terminal).
func (e Entry) Describe() string {
	what := "changed"
	if e.Created {
		what = "created"
	}
	s := e.Type + " " + what
	if len(e.Flags) > 0 {
		s += " [" + strings.Join(e.Flags, ", ") + "]"
	}
	return s
}
