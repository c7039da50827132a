// Package launchlog keeps one bounded log per server of how its launches
// went: a JSON line per launch with the time, the server, the backend, the
// plan's hash and either the refusal (with its fix) or the server's exit
// status and the last lines it wrote on stderr. Clients show a refused
// launch or a server that died before initialize as "EOF"; this log, and
// `mcpolicy doctor --server`, which reads it, say why. It lives in the
// state folder, outside every grant: a server must not rewrite the record
// of its own failure. No value of a granted variable is ever written
// (Redact). A log that cannot be written never stops a launch.
package launchlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Limit is the size a log is kept under: when a record would take it
// past Limit, the oldest records go, keeping the newest half.
const Limit = 256 << 10

// Record is one launch.
type Record struct {
	Time    time.Time `json:"time"`
	Entry   string    `json:"entry"` // what launched: mcpolicy-launch, run, exec
	Project string    `json:"project,omitempty"`
	Server  string    `json:"server"`
	Backend string    `json:"backend"`
	Plan    string    `json:"plan,omitempty"`
	// Refused is why nothing started (the launcher's message), Fix what
	// would make it start; Exit and Signal are the server's end.
	Refused string `json:"refused,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Exit    *int   `json:"exit,omitempty"`
	Signal  string `json:"signal,omitempty"`
	// Stderr are the server's last stderr lines (Tail's bounds), the
	// server's own words: untrusted, and escaped when shown.
	Stderr []string `json:"stderr,omitempty"`
	// Note says why there is neither: the launcher became the server.
	Note string `json:"note,omitempty"`
	// DecisionsNotLogged counts the tool relay's decisions past
	// MaxDecisions, which have no line of their own.
	DecisionsNotLogged int `json:"decisionsNotLogged,omitempty"`
}

// Failed reports whether r is a refusal or an end other than exit 0.
func (r *Record) Failed() bool {
	return r.Refused != "" || r.Signal != "" || (r.Exit != nil && *r.Exit != 0)
}

// Dir is the logs' folder below the state folder (writereport.StateDir:
// $XDG_STATE_HOME/mcpolicy, else ~/.local/state/mcpolicy).
func Dir(state string) string { return filepath.Join(state, "logs") }

// Path is the log of a server of a project: logs/SCOPE-SERVER.log, the
// scope being the project folder's name ("exec" with none). Names are
// kept to a safe alphabet: they are a file name.
func Path(state, project, server string) string {
	scope := "exec"
	if project != "" {
		scope = filepath.Base(filepath.Clean(project))
	}
	return filepath.Join(Dir(state), safe(scope)+"-"+safe(server)+".log")
}

func safe(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	out := strings.TrimLeft(string(b), ".")
	if out == "" {
		return "_"
	}
	return out
}

// InsideError: the logs' folder lies inside a read-write grant (or the
// grant inside it): the server could rewrite its own record.
type InsideError struct{ Dir, Grant string }

func (e *InsideError) Error() string {
	return fmt.Sprintf("the launch logs' folder %s and the read-write grant %s overlap: the server could rewrite its own launch record; set XDG_STATE_HOME to a folder outside every grant", e.Dir, e.Grant)
}

// Outside checks that dir and every writable grant are apart (symlinks
// in their existing parts resolved).
func Outside(dir string, writable []string) error {
	for _, d := range []string{filepath.Clean(dir), resolved(dir)} {
		for _, g := range writable {
			for _, gg := range []string{filepath.Clean(g), resolved(g)} {
				if within(d, gg) || within(gg, d) {
					return &InsideError{Dir: dir, Grant: g}
				}
			}
		}
	}
	return nil
}

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

// Append writes r as one line at the end of the log at path, its folder
// created 0700 and the file 0600, never through a symlink (the folder
// and the file are refused if either is one). Writers of the same log
// take turns (an exclusive flock), and a log that would pass Limit keeps
// only its newest records.
func Append(path string, r *Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return appendLine(path, append(line, '\n'))
}

// appendLine is Append of one line already encoded.
func appendLine(path string, line []byte) error {
	if len(line) > Limit/4 { // Tail bounds stderr well below this; a refusal's text too
		return fmt.Errorf("launch record of %d bytes: too long", len(line))
	}
	dir := filepath.Dir(path)
	// mcpolicy's state folder and logs/ are its own: a link at either
	// (planted by a server granted $XDG_STATE_HOME) would have the record
	// written, and logs/ made, where the server chose.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s is a symlink: refused (a server may have planted it to have the launch record written elsewhere)", d)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if fi, err := os.Lstat(dir); err != nil {
		return err
	} else if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder (a symlink is refused)", dir)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if size+int64(len(line)) > Limit {
		if err := keepNewest(f, Limit/2); err != nil {
			return err
		}
	}
	_, err = f.Write(line)
	return err
}

// keepNewest rewrites f (locked) with its newest whole lines that fit in
// keep bytes, leaving the offset at its end.
func keepNewest(f *os.File, keep int) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	b, err := io.ReadAll(io.LimitReader(f, 2*Limit))
	if err != nil {
		return err
	}
	if len(b) > keep {
		b = b[len(b)-keep:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // the first line is cut: it goes
		} else {
			b = nil
		}
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	_, err = f.Seek(int64(len(b)), io.SeekStart)
	return err
}

// Read returns the records of the log at path, oldest first; a line
// that is not a record (a tool relay's Decision) is skipped.
func Read(path string) ([]Record, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(io.LimitReader(f, 2*Limit))
	sc.Buffer(make([]byte, 64<<10), Limit)
	for sc.Scan() {
		var line struct {
			Record
			Decision string `json:"decision"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Server != "" && line.Decision == "" {
			out = append(out, line.Record)
		}
	}
	return out, sc.Err()
}

// Last is the newest record of the log at path for backend (any: "")
// written at or after since; nil when there is none.
func Last(path, backend string, since time.Time) (*Record, error) {
	recs, err := Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if (backend == "" || r.Backend == backend) && !r.Time.Before(since) {
			return &r, nil
		}
	}
	return nil, nil
}
