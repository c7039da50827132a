package entry

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
)

// RefusedError is an entry, or a client file, that would be reachable by
// a server of the project, or would not start: `client` refuses it as a
// policy error (exit 2), where another error is an ordinary one.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Target is the client file the entries go into: file when given (made
// absolute, relative to where mcpolicy runs, before it is held against
// the grants, which are), the user-scope file with user or when the client
// has no project file, else the project's. Only the project's is portable:
// it may be committed, and names the project by the client's variable.
func Target(c *clientcfg.Client, file string, user bool, root, home string) (target string, portable bool, err error) {
	switch {
	case file != "":
		target, err = filepath.Abs(file)
		return target, false, err
	case user || c.Project == "":
		return c.User(home), false, nil
	default:
		return filepath.Join(root, c.Project), true, nil
	}
}

// CheckTarget refuses a client file a server of the project may write (it
// starts every server it names, the ones not selected too), and a backups
// folder one may reach: the backups hold the file's tokens, and --restore
// puts back what is there.
func CheckTarget(plans []*compiler.Plan, target, root, home string) error {
	m := compiler.Machine{ProjectRoot: root, Home: home}
	for _, p := range plans {
		if err := CheckOutsideGrants(p, m, map[string]string{"client config": target}); err != nil {
			return &RefusedError{err}
		}
	}
	if err := clientcfg.BackupsOutsideProject(plans, DefaultStateDir(), root, home); err != nil {
		return &RefusedError{err}
	}
	return nil
}

// EntriesOptions are the entries one client file gets.
type EntriesOptions struct {
	Client   *clientcfg.Client
	Plans    []*compiler.Plan // every server of the project
	Servers  []string         // only these servers' entries (none: every server's)
	Backend  string           // "": each server's first backend
	Root     string           // the project root
	Home     string
	OutDir   string // the built artefacts
	Self     string // this mcpolicy, beside which the launcher lies
	EnvFile  string // --env-file ("": the default, for clients that need one)
	Portable bool   // the project's own file (Target)
	// Notes is told, for a client that passes no environment, where each
	// server takes its env grants from at spawn.
	Notes io.Writer
}

// ServerEntry is the entry of one server.
type ServerEntry struct {
	Server string
	Launch *Launch
}

// Entries renders the selected servers' entries. It refuses
// (RefusedError) an env file a server of the project may read or write,
// or the launcher cannot read, and a launcher a server may write.
func Entries(o EntriesOptions) ([]ServerEntry, error) {
	want := map[string]bool{}
	for _, s := range o.Servers {
		want[s] = true
	}
	var entries []ServerEntry
	for _, p := range o.Plans {
		if len(want) > 0 && !want[p.Server] {
			continue
		}
		l, err := o.launch(p)
		if err != nil {
			return nil, err
		}
		entries = append(entries, ServerEntry{p.Server, l})
	}
	return entries, nil
}

// launch is p's entry, its env file and launcher checked against every
// server of the project, not only p (LaunchFor checks p's).
func (o EntriesOptions) launch(p *compiler.Plan) (*Launch, error) {
	b := o.Backend
	if b == "" {
		b = p.Backends[0]
	}
	l, err := LaunchFor(o.Client, p, b, o.Root, o.Home, o.OutDir, o.Self, o.EnvFile, o.Portable)
	var efe *EnvFileError
	if errors.As(err, &efe) {
		return nil, &RefusedError{err}
	}
	if err != nil {
		return nil, err
	}
	if f := EnvFileOf(l); f != "" {
		if err := o.envFile(p, f); err != nil {
			return nil, err
		}
	}
	m := compiler.Machine{ProjectRoot: o.Root, Home: o.Home}
	launcher := l.Command
	if !filepath.IsAbs(launcher) {
		// Named in a portable entry: the one PATH finds now is checked
		// here, the one found at spawn by the launcher itself.
		if launcher, err = Launcher(o.Self); err != nil {
			return nil, err
		}
	}
	for _, q := range o.Plans {
		if err := CheckOutsideGrants(q, m, map[string]string{"launcher": launcher}); err != nil {
			return nil, &RefusedError{err}
		}
	}
	return l, nil
}

// envFile refuses an env file a server of the project reaches, or the
// launcher could not read at spawn, and tells Notes where p takes its
// environment from.
func (o EntriesOptions) envFile(p *compiler.Plan, f string) error {
	if err := clientcfg.EnvFileOutsideProject(o.Plans, f, o.Root, o.Home); err != nil {
		return &RefusedError{err}
	}
	exists, err := EnvFileUsable(o.Client.Name, f)
	if err != nil {
		return &RefusedError{err}
	}
	if o.Notes == nil {
		return nil
	}
	names := strings.Join(clientcfg.LaunchEnvNames(p), ", ")
	if !exists {
		fmt.Fprintf(o.Notes, "%s passes no environment to servers: %q takes %s from %s at spawn, which does not exist yet (NAME=value lines, mode 600; `install -m 600 /dev/null %s` creates it)\n",
			o.Client.Name, p.Server, names, f, f)
	} else {
		fmt.Fprintf(o.Notes, "%s passes no environment to servers: %q takes %s from %s at spawn\n",
			o.Client.Name, p.Server, names, f)
	}
	return nil
}

// MergeEntries merges every entry into a client file's bytes (Merge);
// force replaces entries mcpolicy did not write.
func MergeEntries(file string, src []byte, c *clientcfg.Client, entries []ServerEntry, force bool) ([]byte, error) {
	out := src
	for _, e := range entries {
		var err error
		if out, err = Merge(file, out, c, e.Server, e.Launch, force); err != nil {
			return nil, err
		}
	}
	return out, nil
}
