package writereport

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Limits bound a walk: a server that can write its grant can also make
// it endless. A walk cut short is itself flagged.
type Limits struct {
	Entries int
	Depth   int
	Time    time.Duration
}

// DefaultLimits are check's.
var DefaultLimits = Limits{Entries: 2_000_000, Depth: 256, Time: 30 * time.Second}

// Slack widens a session's window: the kernel stamps ctime from a coarse
// clock, up to a tick behind the clock the launcher read.
const Slack = 50 * time.Millisecond

// stat is lstat's answer.
type stat struct {
	mode         uint32 // st_mode: type and permission bits
	ctime, btime int64  // nanoseconds; btime 0 when unknown
}

const (
	sIFMT  = 0o170000
	sIFDIR = 0o040000
	sIFREG = 0o100000
	sIFLNK = 0o120000
	// sIFGitlink is a submodule's mode in git's index.
	sIFGitlink = 0o160000
)

// Entry is one thing changed in a grant during a session.
type Entry struct {
	Path    string   // host path
	Type    string   // "file", "dir", "symlink", "other"
	Created bool     // born in the session (where the file system says)
	Target  string   // a symlink's target
	Flags   []string // the kinds a host runs, or why the walk is blind here
	Ctime   int64
	ReadBy  []string // other servers that mount where it lies (FlagOtherServer)
}

// window is a session's [from, to) in ctime nanoseconds; to 0: open.
type window struct{ from, to int64 }

func (w window) in(ns int64) bool { return ns >= w.from && (w.to == 0 || ns < w.to) }

// walker walks the grants of one session.
type walker struct {
	win      window
	root     string            // the project: where tracked applies
	tracked  map[string]uint32 // paths git tracks (relative to root), their modes
	lim      Limits
	deadline time.Time
	seen     int
	out      []Entry
	cut      []string // why the walk is incomplete
	stopped  bool     // a bound of the whole walk was reached
}

// walk adds what changed under grant.
func (w *walker) walk(grant string) {
	st, err := lstat(grant)
	if err != nil {
		if !os.IsNotExist(err) {
			w.cut = append(w.cut, fmt.Sprintf("%s: %v", grant, err))
		}
		return
	}
	w.visit(grant, st, 0, false)
}

// visit adds p and what is below it; venv: p lies in a folder holding
// pyvenv.cfg.
func (w *walker) visit(p string, st stat, depth int, venv bool) {
	w.seen++
	gitMode, tracked := w.trackedMode(p)
	if w.win.in(st.ctime) && !(tracked && gitShows(gitMode, st.mode)) {
		e := Entry{Path: p, Type: typeOf(st.mode), Created: st.btime != 0 && w.win.in(st.btime), Ctime: st.ctime}
		if e.Type == "symlink" {
			e.Target, _ = os.Readlink(p)
		}
		e.Flags = flags(p, st.mode, w.root, venv)
		if tracked && typeChanged(gitMode, st.mode) {
			e.Flags = append(e.Flags, FlagTypeChange)
		}
		w.out = append(w.out, e)
	}
	if st.mode&sIFMT != sIFDIR {
		return
	}
	if depth >= w.lim.Depth {
		w.cut = append(w.cut, fmt.Sprintf("%s: deeper than %d folders", p, w.lim.Depth))
		return
	}
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
	var names []string
	if err == nil {
		names, err = f.Readdirnames(-1)
		f.Close()
	}
	if err != nil {
		w.unreadable(p, st, err)
		return
	}
	sort.Strings(names)
	if !venv && slices.Contains(names, "pyvenv.cfg") {
		venv = true
		w.flagSelf(p, st, FlagPythonEnv)
	}
	for _, n := range names {
		if w.stopped {
			return
		}
		if w.seen >= w.lim.Entries {
			w.cut, w.stopped = append(w.cut, fmt.Sprintf("more than %d entries", w.lim.Entries)), true
			return
		}
		if w.seen%1024 == 0 && time.Now().After(w.deadline) {
			w.cut, w.stopped = append(w.cut, fmt.Sprintf("longer than %v", w.lim.Time)), true
			return
		}
		c := filepath.Join(p, n)
		cst, err := lstat(c)
		if err != nil {
			if !os.IsNotExist(err) {
				w.cut = append(w.cut, fmt.Sprintf("%s: %v", c, err))
			}
			continue
		}
		w.visit(c, cst, depth+1, venv)
	}
}

// unreadable: a folder the walk cannot list hides what is in it. One
// changed in the session is flagged on its own entry; an older one makes
// the walk incomplete.
func (w *walker) unreadable(p string, st stat, err error) {
	if !w.flagSelf(p, st, FlagUnreadable) {
		w.cut = append(w.cut, fmt.Sprintf("%s: unreadable: %v", p, err))
	}
}

// flagSelf adds flag to the entry of the folder p, when it is listed.
func (w *walker) flagSelf(p string, st stat, flag string) bool {
	if !w.win.in(st.ctime) {
		return false
	}
	for i := range w.out {
		if w.out[i].Path == p {
			if !slices.Contains(w.out[i].Flags, flag) {
				w.out[i].Flags = append(w.out[i].Flags, flag)
			}
			return true
		}
	}
	return false
}

// trackedMode is the mode git's index records for p (false: untracked).
func (w *walker) trackedMode(p string) (uint32, bool) {
	if w.tracked == nil {
		return 0, false
	}
	rel, err := filepath.Rel(w.root, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return 0, false
	}
	m, ok := w.tracked[filepath.ToSlash(rel)]
	return m, ok
}

// typeChanged: p is no longer the type git tracks (a submodule is a
// folder).
func typeChanged(gitMode, mode uint32) bool {
	if gitMode&sIFMT == sIFGitlink {
		return mode&sIFMT != sIFDIR
	}
	return gitMode&sIFMT != mode&sIFMT
}

// gitShows: git status shows every change of a tracked entry of this
// mode: a regular file still regular without setuid, setgid or sticky
// bits (git records only the exec bit), a symlink still a symlink (git
// compares its target). Anything else is listed.
func gitShows(gitMode, mode uint32) bool {
	switch {
	case gitMode&sIFMT == sIFREG && mode&sIFMT == sIFREG:
		return mode&0o7000 == 0
	case gitMode&sIFMT == sIFLNK && mode&sIFMT == sIFLNK:
		return true
	}
	return false
}

func typeOf(mode uint32) string {
	switch mode & sIFMT {
	case sIFREG:
		return "file"
	case sIFDIR:
		return "dir"
	case sIFLNK:
		return "symlink"
	}
	return "other"
}
