package supervise

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/egress"
	"github.com/mcpolicy/mcpolicy/launch"
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

// OpenDefaultLog opens the server's DefaultLog to append to, making its
// folder (0700). A log that holds half of limit or more (limit > 0) is
// first moved to PATH.1, replacing the one before: the file is no one's
// to rotate by hand, and the proxy stops logging at limit, so the two
// hold at most twice limit. Refused, like OpenLog, inside a folder the
// server may write.
func OpenDefaultLog(p *compiler.Plan, m compiler.Machine, limit int64) (*os.File, string, error) {
	path, err := DefaultLog(p.Server, m.ProjectRoot)
	if err != nil {
		return nil, "", err
	}
	if g, in := launch.InsideAny(path, p.WritableSources(m)); in {
		return nil, path, fmt.Errorf("the decision log %s lies inside %s, which server %s may write", path, g, p.Server)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, path, fmt.Errorf("decision log: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && limit > 0 && fi.Size() >= limit/2 {
		if err := os.Rename(path, path+".1"); err != nil {
			return nil, path, fmt.Errorf("decision log: %w", err)
		}
	}
	f, err := OpenLog(path, p, m)
	return f, path, err
}
