package supervise

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"golang.org/x/sys/unix"
)

// OpenLog opens the file `mcpolicy run --log` appends the egress proxy's
// decisions to. It is refused inside a folder the plan lets the server
// write: there the server could swap it for a symlink to a file the user's
// shell reads, or forge the denials that `mcpolicy suggest` turns into
// grants. egress.OpenLog refuses a symlink, a hard link or a FIFO where
// the log goes.
func OpenLog(path string, p *compiler.Plan, m compiler.Machine) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if g, in := launch.InsideAny(abs, p.WritableSources(m)); in {
		return nil, fmt.Errorf("decision log %s lies inside %s, which server %s may write: it could replace the log with a link to another file, or forge the denials `mcpolicy suggest` reads; keep the log outside every read-write grant (e.g. ~/.local/state/mcpolicy/%s.jsonl)", abs, g, p.Server, p.Server)
	}
	return egress.OpenLog(abs)
}

// DefaultLog is where `mcpolicy run` appends a server's decisions when no
// --log names a file, and where `mcpolicy suggest` reads them:
// $XDG_STATE_HOME/mcpolicy/egress/NAME-HASH.jsonl (~/.local/state without
// it), NAME the server's name (characters other than letters, digits, -
// and _ written as _) and HASH 8 hex digits of the project root and
// the name, so two projects' servers of one name keep apart. Only the
// proxy writes there; the stderr it would otherwise share with the
// server is where a server writes lines that read as denials, which
// suggest would turn into entries.
func DefaultLog(server, projectRoot string) (string, error) {
	state := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) { // the spec: a relative value is invalid, ignored
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no decision log: %v (name one with --log)", err)
		}
		state = filepath.Join(home, ".local", "state")
	}
	name := []byte(server)
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			name[i] = '_'
		}
	}
	if len(name) > 64 {
		name = name[:64]
	}
	sum := sha256.Sum256([]byte(projectRoot + "\x00" + server))
	return filepath.Join(state, "mcpolicy", "egress", fmt.Sprintf("%s-%x.jsonl", name, sum[:4])), nil
}

// OpenDefaultLog opens the server's DefaultLog to append to. writable
// are the folders any server of the project may write (project.Writable):
// a log inside one is refused, as a --log would be, since that server
// could forge the denials suggest reads or read the decisions of another
// server (every server's log is in one folder). The folders mcpolicy and
// egress below the state folder are made (0700) and reached without
// following a symlink: they are mcpolicy's, and a link there is not. A
// log that holds half of limit or more (limit > 0) is first moved to
// PATH.1, replacing the one before, unless a run is writing it still (each
// holds a shared lock on it): the file is no one's to rotate by hand, and
// the proxy stops logging at limit, so the two hold at most twice it.
func OpenDefaultLog(server string, m compiler.Machine, writable []string, limit int64) (*os.File, string, error) {
	path, dfd, err := defaultLogDir(server, m, writable, true)
	if err != nil {
		return nil, path, err
	}
	defer unix.Close(dfd)
	base := filepath.Base(path)
	if old, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		var st unix.Stat_t
		if unix.Fstat(old, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && limit > 0 && st.Size >= limit/2 &&
			unix.Flock(old, unix.LOCK_EX|unix.LOCK_NB) == nil {
			unix.Renameat(dfd, base, dfd, base+".1")
		}
		unix.Close(old)
	}
	f, err := openLogAt(dfd, path, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT)
	if err != nil {
		return nil, path, err
	}
	unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB) // held until closed: no rotation under this run
	return f, path, nil
}

// OpenDefaultLogToRead opens the server's DefaultLog for mcpolicy
// suggest, with the checks OpenDefaultLog makes: what it reads must be the
// proxy's alone.
func OpenDefaultLogToRead(server string, m compiler.Machine, writable []string) (*os.File, string, error) {
	path, dfd, err := defaultLogDir(server, m, writable, false)
	if err != nil {
		return nil, path, err
	}
	defer unix.Close(dfd)
	f, err := openLogAt(dfd, path, unix.O_RDONLY)
	return f, path, err
}

// openLogAt opens path's file in its folder dfd with flags, following no
// symlink and waiting on no FIFO, and checks it (egress.CheckLog).
func openLogAt(dfd int, path string, flags int) (*os.File, error) {
	fd, err := unix.Openat(dfd, filepath.Base(path), flags|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("decision log %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	if err := egress.CheckLog(f, path); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// defaultLogDir is the server's DefaultLog and its folder, opened: the
// state folder as the user set it up, then mcpolicy and egress below it
// without following a symlink, each this user's and closed to others
// (made, 0700, when create is set and they are missing).
func defaultLogDir(server string, m compiler.Machine, writable []string, create bool) (string, int, error) {
	path, err := DefaultLog(server, m.ProjectRoot)
	if err != nil {
		return "", -1, err
	}
	if g, in := launch.InsideAny(path, writable); in {
		return path, -1, fmt.Errorf("the decision log %s lies inside %s, which a server of this project may write: it could forge the log, or read another server's", path, g)
	}
	dir := filepath.Dir(path)
	state := filepath.Dir(filepath.Dir(dir))
	if create {
		if err := os.MkdirAll(state, 0o700); err != nil {
			return path, -1, fmt.Errorf("decision log: %w", err)
		}
	}
	fd, err := unix.Open(state, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return path, -1, fmt.Errorf("decision log: %s: %w", state, err)
	}
	here := state
	for _, name := range []string{"mcpolicy", "egress"} {
		here = filepath.Join(here, name)
		next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, name, 0o700); err == nil || errors.Is(err, unix.EEXIST) {
				next, err = unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return path, -1, fmt.Errorf("decision log: %s is not a folder (a symlink?): mcpolicy made it one, so something else replaced it; refusing to follow it", here)
		}
		if err != nil {
			return path, -1, fmt.Errorf("decision log: %s: %w", here, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			unix.Close(next)
			return path, -1, fmt.Errorf("decision log: %s is not this user's alone (owner %d, mode %04o): refusing it", here, st.Uid, st.Mode&0o7777)
		}
		fd = next
	}
	return path, fd, nil
}
