// Package writereport is the evidence of what a server wrote: the
// launcher records each session (its read-write grants, its start and,
// where it waits, its end) outside every grant, and the report, computed
// later, lists what changed in those grants during the session that git
// does not track, with the kinds a host runs flagged. A mount cannot tell
// a server's write from ordinary work; the report makes the writes
// something a reviewer reads. It imports no CUE: the launcher links it,
// and records before every start.
package writereport

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Keep is how many sessions are kept per project: older ones are pruned
// when a new one is recorded, but only those settled (ended, and found by
// a report with nothing pending: nothing flagged left unaccepted, the walk
// complete). A session nobody reviewed is never pruned: dropping it would
// drop the evidence of what it planted.
const Keep = 100

// Session is one launch, as the launcher recorded it.
type Session struct {
	ID      string `json:"id"`
	Project string `json:"project"`
	Server  string `json:"server"`
	Backend string `json:"backend"`
	// Artefact and Digest are the artefact started and the digest the
	// client entry pinned (none for an engine launch).
	Artefact string `json:"artefact,omitempty"`
	Digest   string `json:"sha256,omitempty"`
	// Start and End are wall-clock nanoseconds; End is 0 where the
	// launcher execs (bwrap, engines) and cannot see the end.
	Start int64 `json:"start"`
	End   int64 `json:"end,omitempty"`
	// PID, ProcStart and BootID name the launcher's process (which the
	// exec keeps), so a report can tell a session that still runs from one
	// that has ended.
	PID       int    `json:"pid"`
	ProcStart uint64 `json:"procStart,omitempty"`
	BootID    string `json:"bootId,omitempty"`
	// Detached: the launcher's end does not end the session. A container
	// keeps running when its `docker run` or `podman run` process is
	// killed, and without a PID namespace (Landlock alone) a daemon the
	// server started outlives it. The window stays open until a report
	// finds the launcher gone after a reviewer accepted the session.
	Detached bool `json:"detached,omitempty"`
	// Writable are the host paths of the read-write grants, as the
	// launcher resolved them.
	Writable []string `json:"writable"`
}

// StateDir is where sessions are recorded: $XDG_STATE_HOME/mcpolicy
// (an absolute one), else $HOME/.local/state/mcpolicy; "" when neither
// is set.
func StateDir(getenv func(string) string) string {
	if x := getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "mcpolicy")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "mcpolicy")
	}
	return ""
}

// projectDir is the folder of one project's sessions.
func projectDir(state, project string) string {
	sum := sha256.Sum256([]byte(filepath.Clean(project)))
	return filepath.Join(state, "sessions", hex.EncodeToString(sum[:8]))
}

// InsideError says the state folder lies inside a read-write grant, or
// the grant inside the state folder: a server could rewrite or remove the
// evidence of its own writes, or forge a review.
type InsideError struct {
	State, Grant string
	GrantInside  bool // the grant lies inside the state folder
}

func (e *InsideError) Error() string {
	if e.GrantInside {
		return fmt.Sprintf("the read-write grant %s lies inside the session records' folder %s: the server could remove the evidence of its own writes, or forge a review; grant another folder, or set XDG_STATE_HOME to a folder outside every grant", e.Grant, e.State)
	}
	return fmt.Sprintf("the session records' folder %s lies inside the read-write grant %s: the server could rewrite the evidence of its own writes; set XDG_STATE_HOME to a folder outside every grant", e.State, e.Grant)
}

// within reports whether p is dir or below it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// resolved is p with its longest existing prefix's symlinks resolved.
func resolved(p string) string {
	rest := ""
	for q := filepath.Clean(p); ; q = filepath.Dir(q) {
		if r, err := filepath.EvalSymlinks(q); err == nil {
			return filepath.Join(r, rest)
		}
		if q == filepath.Dir(q) {
			return filepath.Clean(p)
		}
		rest = filepath.Join(filepath.Base(q), rest)
	}
}

// Record writes s (its ID, Start and process fields filled here) into
// state, refusing a state folder inside one of s.Writable or one of them
// inside the state folder, and prunes the project's settled sessions
// down to Keep. It returns the record's path.
func Record(state string, s *Session) (string, error) {
	for _, st := range []string{filepath.Clean(state), resolved(state)} {
		for _, g := range s.Writable {
			for _, gg := range []string{filepath.Clean(g), resolved(g)} {
				if within(st, gg) {
					return "", &InsideError{State: state, Grant: g}
				}
				if within(gg, st) {
					return "", &InsideError{State: state, Grant: g, GrantInside: true}
				}
			}
		}
	}
	dir := projectDir(state, s.Project)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	now := time.Now()
	var rnd [4]byte
	rand.Read(rnd[:])
	s.Start = now.UnixNano()
	// Nanoseconds, fixed width: IDs sort by time, also within a second.
	s.ID = now.UTC().Format("20060102T150405.000000000") + "-" + hex.EncodeToString(rnd[:])
	s.PID = os.Getpid()
	s.ProcStart, s.BootID = self()
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, s.ID+".json")
	if err := writeNew(p, append(b, '\n')); err != nil {
		return "", err
	}
	prune(dir, Keep)
	return p, nil
}

// writeNew creates p (never an existing file, never through a symlink),
// mode 600.
func writeNew(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// MarkEnd records when the session ended (the Landlock launcher waits;
// a report records the first moment it saw an exec'd session gone).
func MarkEnd(record string, end time.Time) error {
	return writeNew(strings.TrimSuffix(record, ".json")+".end", []byte(strconv.FormatInt(end.UnixNano(), 10)+"\n"))
}

// prune removes the oldest settled sessions of dir (IDs sort by time)
// while more than keep are recorded, with their marks. An unsettled one
// stays, however many there are (Backlog counts them).
func prune(dir string, keep int) {
	ids, settled := list(dir)
	n := len(ids)
	for _, id := range ids {
		if n <= keep {
			return
		}
		if !settled[id] {
			continue
		}
		for _, ext := range []string{".json", ".end", ".accepted", ".settled"} {
			os.Remove(filepath.Join(dir, id+ext))
		}
		n--
	}
}

// Backlog is how many of the project's sessions are not settled, when
// that is more than Keep (0 otherwise): none of them is pruned until a
// reviewer runs `mcpolicy check` or accepts them.
func Backlog(state, project string) int {
	ids, settled := list(projectDir(state, filepath.Clean(project)))
	n := len(ids) - len(settled)
	if n <= Keep {
		return 0
	}
	return n
}

// ids are the session IDs recorded in dir, oldest first.
func ids(dir string) []string {
	out, _ := list(dir)
	return out
}

// list is ids, and which of them are settled, from one read of dir: the
// launcher prunes at every spawn, and a backlog of sessions nobody
// reviewed can be long.
func list(dir string) ([]string, map[string]bool) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	var out []string
	marks := map[string]bool{}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			out = append(out, id)
		} else if id, ok := strings.CutSuffix(e.Name(), ".settled"); ok {
			marks[id] = true
		}
	}
	settled := map[string]bool{}
	for _, id := range out {
		if marks[id] {
			settled[id] = true
		}
	}
	sort.Strings(out)
	return out, settled
}

// readStamp reads a mark's nanoseconds (0 when there is none).
func readStamp(p string) (int64, error) {
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}
