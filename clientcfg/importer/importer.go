package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Options say whose machine the entries are read on.
type Options struct {
	Home string // the user's home folder
	// Path is the PATH a bare command is looked up in (the user's: the
	// client passes it on).
	Path string
	// Getenv reads the variables that move the runners' folders
	// (XDG_DATA_HOME, UV_TOOL_DIR, PIPX_HOME, npm_config_cache); nil: none set.
	Getenv func(string) string
}

func (o Options) env(name string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(name)
}

// Server is what import made of one entry: a policy, or why none.
type Server struct {
	Entry string       // the entry's name in the client file
	File  string       // the client file
	Pos   position.Pos // the entry
	// Section is where the entry sits when not at the file's servers key
	// (~/.claude.json's projects.DIR.mcpServers): "" at the top.
	LocalScope string
	Skipped    string // why no policy was written ("" when one was)
	Policy     *Policy
	Secrets    []Secret // values for the env file, never in the policy
	Notes      []string // what the user should know: narrowed, dropped, renamed
	// Engine is the container program the entry ran (docker, podman), ""
	// for a host command.
	Engine string
}

// Secret is a value an entry held inline, for the env file.
type Secret struct{ Name, Value string }

// Import makes one Server of each entry.
func Import(ls []*clientcfg.Launch, o Options) []Server {
	var out []Server
	for _, l := range ls {
		out = append(out, o.server(l))
	}
	return out
}

// server imports one entry.
func (o Options) server(l *clientcfg.Launch) Server {
	t := l.Target
	s := Server{Entry: t.Server, File: t.File, Pos: t.Pos}
	if t.ProjectRoot != "" && strings.HasSuffix(filepath.Base(t.File), ".claude.json") {
		s.LocalScope = filepath.ToSlash(t.ProjectRoot)
	}
	kind, confined := sandboxOf(t.Launcher)
	switch {
	case t.Remote != "":
		s.Skipped = "a remote server (" + t.Remote + "): another machine runs it, nothing here to confine"
	case t.Launcher == readback.OwnLauncher || t.Digest != "" || t.FixedTop: // mcpolicy-launch --engine reads as its engine
		s.Skipped = "already confined: it starts what mcpolicy built"
	case confined && kind == artefact.Engine:
		s.Engine = t.Launcher
		o.container(l, &s)
	case confined:
		s.Skipped = "already confined by a hand-written " + t.Launcher + " command line (mcpolicy lint judges it)"
	case len(l.Argv) == 0:
		s.Skipped = "no command to run"
	default:
		o.host(l, &s)
	}
	if s.Skipped != "" {
		s.Policy, s.Secrets = nil, nil
	}
	return s
}

// sandboxOf is the kind of sandbox a launcher program starts; false for a
// program that is no backend's (the entry runs unconfined).
func sandboxOf(launcher string) (artefact.Sandbox, bool) {
	for _, b := range registry.All() {
		if launcher != "" && (b.Runtime().Program == launcher || b.Name() == launcher) {
			return b.Runtime().Sandbox, true
		}
	}
	return 0, false
}

// ServerName is the policy's name for an entry: the entry's own when it is
// a valid server name (then `client --write` replaces that entry), else
// lowercased with every other character a '-'.
func ServerName(entry string) string {
	var b strings.Builder
	for i, c := range strings.ToLower(entry) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b.WriteRune(c)
		case i > 0 && (c == '.' || c == '_' || c == '-'):
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	name := strings.Trim(b.String(), "-._")
	if name == "" {
		name = "server"
	}
	if len(name) > 63 {
		name = name[:63]
	}
	return name
}

// draft is a policy being made, with the machine's paths at hand.
type draft struct {
	o     Options
	l     *clientcfg.Launch
	s     *Server
	p     *Policy
	mount map[string]int // host path -> index in p.Mounts
}

func (o Options) newDraft(l *clientcfg.Launch, s *Server) *draft {
	name := ServerName(s.Entry)
	if name != s.Entry {
		s.Notes = append(s.Notes, fmt.Sprintf("the entry's name %q is not a server name (lowercase letters, digits, '.', '_', '-'): the policy names it %q, and `client --write` adds that entry beside the old one, which you then remove", s.Entry, name))
	}
	p := &Policy{Server: name}
	p.Header = []string{
		fmt.Sprintf("Imported by `mcpolicy import` from %s (entry %q, line %d).", o.tilde(s.File), s.Entry, s.Pos.Line),
		"Each grant is the narrowest the entry implies, with the reason beside it; review them, then `mcpolicy client --write` replaces the entry with one that starts this policy confined. A server that needs more fails closed: `mcpolicy why PATH` names the grant that would give it.",
	}
	s.Policy = p
	return &draft{o: o, l: l, s: s, p: p, mount: map[string]int{}}
}

// tilde writes a host path of this machine as a policy does: "~/..." under
// the home folder, else absolute.
func (o Options) tilde(abs string) string {
	if o.Home == "" {
		return filepath.ToSlash(abs)
	}
	home := filepath.Clean(o.Home)
	switch abs = filepath.Clean(abs); {
	case abs == home:
		return "~"
	case strings.HasPrefix(abs, home+string(filepath.Separator)):
		return "~/" + filepath.ToSlash(abs[len(home)+1:])
	}
	return filepath.ToSlash(abs)
}

// tildeWords joins a command's words for a description, the home folder
// written ~ (the policy may be shared; the command keeps the words).
func (o Options) tildeWords(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w
		if filepath.IsAbs(w) {
			out[i] = o.tilde(w)
		}
	}
	return strings.Join(out, " ")
}

// addMount grants the host path abs at the same path in the sandbox (so
// the command's words that name it stay valid), read-write when rw. A
// path under one already granted is not granted again (a read-write one
// widens the grant it lies in).
func (d *draft) addMount(abs string, rw bool, why string) {
	d.addMountAt(abs, "", rw, why)
}

// addMountAt grants abs at target ("": the same path).
func (d *draft) addMountAt(abs, target string, rw bool, why string) {
	abs = filepath.Clean(abs)
	if target == "" {
		for host, i := range d.mount {
			m := &d.p.Mounts[i]
			if m.Source != m.Target {
				continue
			}
			if abs == host || strings.HasPrefix(abs, host+string(filepath.Separator)) {
				if rw && !m.RW && abs == host {
					m.RW, m.Why = true, why
				}
				if !rw || m.RW || abs == host {
					return
				}
			}
		}
	}
	src := d.o.tilde(abs)
	if target == "" {
		target = src
	}
	d.mount[abs] = len(d.p.Mounts)
	fi, err := os.Stat(abs)
	d.p.Mounts = append(d.p.Mounts, Mount{Source: src, Target: target, RW: rw, Why: why, Folder: err == nil && fi.IsDir()})
}

// finish sorts what the policy lists, for the same bytes every time.
func (d *draft) finish() {
	sort.SliceStable(d.p.Mounts, func(i, j int) bool { return d.p.Mounts[i].Target < d.p.Mounts[j].Target })
	sort.SliceStable(d.p.Env, func(i, j int) bool { return d.p.Env[i].Value < d.p.Env[j].Value })
	sort.SliceStable(d.p.SetEnv, func(i, j int) bool { return d.p.SetEnv[i].Name < d.p.SetEnv[j].Name })
	sort.SliceStable(d.p.Allow, func(i, j int) bool { return d.p.Allow[i].Value < d.p.Allow[j].Value })
	sort.SliceStable(d.s.Secrets, func(i, j int) bool { return d.s.Secrets[i].Name < d.s.Secrets[j].Name })
}

// exists reports whether a path is there on this machine.
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isDir reports whether p is a folder.
func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// underSystem reports whether a program lies in the system's own folders,
// which the system, node and python runtimes bind read-only: no mount.
func underSystem(p string) bool {
	for _, dir := range []string{"/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/"} {
		if strings.HasPrefix(p, dir) {
			return true
		}
	}
	return false
}
