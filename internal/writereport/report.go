package writereport

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/gitindex"
	"github.com/mcpolicy/mcpolicy/internal/printable"
)

// Report is what one session wrote, as its grants show it now.
type Report struct {
	Session Session
	// Running: the session's process still runs (its window is open).
	Running bool
	// Open: the launcher of a detached session is gone, and its window
	// stays open until the session is accepted (its container, or a
	// daemon, may still run).
	Open bool
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
	// Mounted maps the host path of each mount source of the project's
	// servers to the servers that mount it: a write there by another
	// server's session is flagged (FlagOtherServer).
	Mounted map[string][]string
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
	if err := Trust(o.State, root); err != nil {
		return nil, err
	}
	all := ids(dir)
	if o.Last > 0 && len(all) > o.Last {
		all = all[len(all)-o.Last:]
	}
	var tracked map[string]uint32
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
		r.flagMounted(o.Mounted)
		out = append(out, r)
	}
	return out, nil
}

func report(dir, id, root string, tracked map[string]uint32, lim Limits) (*Report, error) {
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
	if r.Accepted, err = readStamp(filepath.Join(dir, id+".accepted")); err != nil {
		return nil, err
	}
	if r.Session.End == 0 {
		r.Running = alive(&r.Session)
		switch {
		case r.Running:
		case r.Session.Detached && r.Accepted == 0:
			// Its launcher is gone, not necessarily what it started.
			r.Open = true
		default:
			// Gone: nothing it started writes after this.
			now := time.Now()
			MarkEnd(rec, now)
			r.Session.End = now.UnixNano()
		}
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
	if r.Session.End != 0 && len(r.Pending()) == 0 && !r.Blind() {
		// Its window is closed: nothing becomes pending later, and
		// pruning may drop it.
		writeNew(filepath.Join(dir, id+".settled"), []byte(strconv.FormatInt(time.Now().UnixNano(), 10)+"\n"))
	}
	return r, nil
}

// Dir is the folder of the project's session records.
func Dir(state, project string) string { return projectDir(state, filepath.Clean(project)) }

// Summary is the line that says how many sessions were read, and where:
// a client whose XDG_STATE_HOME differs from the shell's records
// elsewhere, and an empty report must not look like a clean one.
func Summary(n int, state, project string) string {
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("write report: %d session%s recorded for this project in %s", n, s, printable.String(Dir(state, project)))
}

// Trust refuses session records others could have written: the state
// folder, its sessions folder and the project's must be the user's own
// folders (not symlinks) that neither group nor others may write; a
// missing one holds nothing.
func Trust(state, project string) error {
	for _, d := range []string{filepath.Clean(state), filepath.Join(state, "sessions"), Dir(state, project)} {
		fi, err := os.Lstat(d)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("the session records' folder %s is not a folder (%v): refusing to read it; remove it, and launch again", d, fi.Mode().Type())
		}
		if uid, ok := owner(fi); ok && uid != os.Getuid() {
			return fmt.Errorf("the session records' folder %s belongs to uid %d, not to you (uid %d): whoever owns it could forge or remove records; refusing to read it (set XDG_STATE_HOME to a folder of yours, in the client's environment too)", d, uid, os.Getuid())
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return fmt.Errorf("the session records' folder %s is writable by its group or others (mode %04o): they could forge or remove records; refusing to read it (chmod go-w %s, and review what it holds)", d, fi.Mode().Perm(), d)
		}
	}
	return nil
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
		if !inner && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Accept marks a session (its ID, or "all") of the project reviewed:
// what it wrote until now no longer fails check. It returns the IDs
// accepted.
func Accept(state, project, id string) ([]string, error) {
	dir := projectDir(state, filepath.Clean(project))
	if err := Trust(state, project); err != nil {
		return nil, err
	}
	all := ids(dir)
	var pick []string
	switch {
	case id == "all":
		pick = all
	case slices.Contains(all, id):
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

// flagMounted flags each entry written inside a mount source of another
// server than the session's, naming them.
func (r *Report) flagMounted(mounted map[string][]string) {
	for i := range r.Entries {
		e := &r.Entries[i]
		var others []string
		for src, servers := range mounted {
			if !within(e.Path, filepath.Clean(src)) {
				continue
			}
			for _, s := range servers {
				if s != r.Session.Server && !slices.Contains(others, s) {
					others = append(others, s)
				}
			}
		}
		if len(others) > 0 {
			sort.Strings(others)
			e.Flags = append(e.Flags, FlagOtherServer)
			e.ReadBy = others
		}
	}
}
