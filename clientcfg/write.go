package clientcfg

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"

	"github.com/tailscale/hujson"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// Client is one MCP client format mcpolicy can write entries for.
type Client struct {
	Name    string
	Key     string // the servers object's key ("" for Codex's TOML tables)
	Project string // the project-scope file, relative to the project ("" when none)
	// User is the user-scope file for this OS.
	User func(home string) string
	// Workspace is the client's variable for the project folder, usable in
	// a committed project-scope file ("" when it has none).
	Workspace string
	// EnvRef is how the client refers to its own environment in an "env"
	// value ("" when it cannot).
	EnvRef string
	// EnvVars: the client forwards variables listed by name (Codex's
	// env_vars). A client with neither gets --env-file (see env.go).
	EnvVars bool
	// Stdio adds the client's documented stdio marker fields.
	Stdio map[string]any
	// JSONC: the client reads comments and trailing commas (VS Code, Zed);
	// every other JSON client reads strict JSON.
	JSONC bool
}

func darwin(home, mac, linux string) string {
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, mac)
	}
	return filepath.Join(home, linux)
}

// Clients are the targets of `mcpolicy client`.
var Clients = []Client{
	{Name: "claude-desktop", Key: "mcpServers",
		User: func(h string) string {
			return darwin(h, "Library/Application Support/Claude/claude_desktop_config.json", ".config/Claude/claude_desktop_config.json")
		}},
	{Name: "claude-code", Key: "mcpServers", Project: ".mcp.json", EnvRef: "${%s}",
		User: func(h string) string { return filepath.Join(h, ".claude.json") }},
	{Name: "cursor", Key: "mcpServers", Project: ".cursor/mcp.json", Workspace: "${workspaceFolder}", EnvRef: "${env:%s}",
		User: func(h string) string { return filepath.Join(h, ".cursor/mcp.json") }},
	{Name: "vscode", Key: "servers", Project: ".vscode/mcp.json", Workspace: "${workspaceFolder}", EnvRef: "${env:%s}",
		Stdio: map[string]any{"type": "stdio"}, JSONC: true,
		User: func(h string) string {
			return darwin(h, "Library/Application Support/Code/User/mcp.json", ".config/Code/User/mcp.json")
		}},
	{Name: "windsurf", Key: "mcpServers",
		User: func(h string) string { return filepath.Join(h, ".codeium/windsurf/mcp_config.json") }},
	{Name: "zed", Key: "context_servers", Project: ".zed/settings.json", JSONC: true,
		User: func(h string) string { return filepath.Join(h, ".config/zed/settings.json") }},
	{Name: "gemini", Key: "mcpServers", Project: ".gemini/settings.json", EnvRef: "${%s}",
		User: func(h string) string { return filepath.Join(h, ".gemini/settings.json") }},
	{Name: "cline", Key: "mcpServers", Stdio: map[string]any{"type": "stdio"},
		User: func(h string) string {
			return darwin(h, "Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
				".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json")
		}},
	{Name: "codex", Project: ".codex/config.toml", EnvVars: true,
		User: func(h string) string { return filepath.Join(h, ".codex/config.toml") }},
}

// LookupClient finds a target by name.
func LookupClient(name string) (*Client, error) {
	var names []string
	for i := range Clients {
		if Clients[i].Name == name {
			return &Clients[i], nil
		}
		names = append(names, Clients[i].Name)
	}
	return nil, fmt.Errorf("unknown client %q (clients: %s)", name, strings.Join(names, ", "))
}

// Launch is how an entry starts a server: an absolute command, its args,
// and the environment the wrapper needs from the client.
type Launch struct {
	Command string
	Args    []string
	Env     map[string]string
	EnvVars []string // names the client forwards (Codex's env_vars)
}

// workspacePaths renders project paths with the client's variable, home
// paths absolutely (a committed file must not hold this machine's project
// path, but a home path is the user's own).
type workspacePaths struct {
	variable string
	home     string
}

func (w workspacePaths) Resolve(p compiler.HostPath) string {
	switch p.Base {
	case compiler.ProjectRoot:
		if p.Rel == "." {
			return w.variable
		}
		return w.variable + "/" + p.Rel
	case compiler.Home:
		return filepath.Join(w.home, filepath.FromSlash(p.Rel))
	}
	return p.Rel
}

// LaunchFor renders how a client starts the plan's server on a backend.
// portable uses the client's workspace variable for project paths. envFile
// is where the launcher takes env grant values from for a client that
// passes none ("": launch.EnvFileDefault).
func LaunchFor(c *Client, p *compiler.Plan, backend, root, home, outDir, self, envFile string, portable bool) (*Launch, error) {
	var r compiler.Resolver = compiler.Machine{ProjectRoot: root, Home: home}
	if portable && c.Workspace != "" {
		r = workspacePaths{c.Workspace, home}
	}
	b, err := backends.Lookup(backend)
	if err != nil {
		return nil, err
	}
	if !emit.BuiltFor(p, b) {
		return nil, fmt.Errorf("server %q is not built for backend %s (its backends: %s): add it to \"backends\" in the policy and run `mcpolicy build`, or pick one of those", p.Server, backend, strings.Join(p.Backends, ", "))
	}
	projectRoot := r.Resolve(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."})
	l := &Launch{Env: map[string]string{}}
	if p.Network.Mode == "allowlist" {
		// The egress proxy must run beside the server: mcpolicy run starts
		// both, and the forwarder it binds into the sandbox is this
		// executable, which must then be static.
		if err := b.Check(p); err != nil {
			return nil, err
		}
		// (Seatbelt binds no forwarder: its proxy listens on the host.)
		if b.Builds() != seatbelt.Backend {
			if err := supervise.CheckStatic(self); err != nil {
				return nil, fmt.Errorf("server %q allows egress: %w", p.Server, err)
			}
		}
		// --plan pins what was reviewed: run refuses (exit 8) a policy
		// that compiles to anything else.
		l.Command, l.Args = self, []string{"run", "--policy", projectRoot, "--server", p.Server, "--backend", backend, "--plan", p.Hash}
	} else {
		cmd, err := b.Entry(p, emit.EntryEnv{Paths: r, Root: projectRoot, Out: outDir,
			Show:     func(file string) string { return shown(r, root, file) },
			Launcher: func() (string, error) { return Launcher(self) },
			Pin:      func(file string, want []byte) (string, error) { return pin(p, file, want) },
			Program: func(h compiler.HostPath) (string, error) {
				return launch.ProgramDigest(compiler.Machine{ProjectRoot: root, Home: home}.Resolve(h), root, home)
			},
			Abs: absolute})
		if err != nil {
			return nil, err
		}
		l.Command, l.Args = cmd.Path, cmd.Args
		for k, v := range cmd.Env {
			l.Env[k] = v
		}
	}
	// GUI clients start servers with a minimal environment: what the
	// wrapper needs is written down, and the plan's names refer to the
	// client's own environment where the client can say so.
	l.Env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	// The engine's address and rootless podman's runtime folder: clients
	// do not pass them on, and without them the engine is not found.
	for _, name := range b.HostEnv() {
		if v := lookupEnv(name); v != "" {
			l.Env[name] = v
		}
	}
	switch {
	case len(p.Env) == 0:
	case c.EnvRef != "":
		for _, name := range p.EnvNames() {
			l.Env[name] = fmt.Sprintf(c.EnvRef, name)
		}
	case c.EnvVars:
		l.EnvVars = p.EnvNames()
	case !b.EnvFile():
		return nil, fmt.Errorf("server %q: %s passes no environment of its own and expands nothing, and the %s wrapper reads no env file: its env grants (%s) would reach the server empty; use a client that passes them (claude-code, cursor, vscode, gemini, codex) or another backend", p.Server, c.Name, backend, strings.Join(p.EnvNames(), ", "))
	default:
		// The client cannot pass them: the launcher reads them from a file
		// the server cannot reach, at spawn (launch.EnvFile).
		if envFile == "" {
			envFile = launch.EnvFileDefault(home, lookupEnv("XDG_CONFIG_HOME"))
		}
		if err := envFileOutside(p, envFile, root, home); err != nil {
			return nil, err
		}
		if l.Command == self { // mcpolicy run: a flag of the subcommand
			l.Args = append(l.Args, "--env-file", envFile)
		} else { // mcpolicy-launch: before the artefact or --
			l.Args = append([]string{"--env-file", envFile}, l.Args...)
		}
	}
	return l, nil
}

// EnvFileError is an env file `client` refuses (exit 2, as a policy
// error: the entry would not start).
type EnvFileError struct{ Err error }

func (e *EnvFileError) Error() string { return e.Err.Error() }
func (e *EnvFileError) Unwrap() error { return e.Err }

// envFileOutside refuses an env file inside a grant of the plan or the
// project (launch.EnvFile refuses it again at spawn).
func envFileOutside(p *compiler.Plan, file, root, home string) error {
	if !filepath.IsAbs(file) {
		return &EnvFileError{fmt.Errorf("--env-file %q: not an absolute path", file)}
	}
	m := compiler.Machine{ProjectRoot: root, Home: home}
	f := filepath.Clean(file)
	grants := append(append([]string{root}, p.Runtime.ReadOnly...), grantPaths(p, m)...)
	if g, in := launch.InsideAny(f, grants); in {
		return &EnvFileError{fmt.Errorf("server %q: the env file %s lies inside %s, which the server is given: it could read every secret in it; pass --env-file with a path outside every grant", p.Server, f, g)}
	}
	return nil
}

// EnvFileOutsideProject refuses an env file that lies in a grant of any
// server of the project, not only the one the entry starts: the file holds
// every server's values, so a server that reads it (a read-only grant) has
// them all, and one that writes it (a read-write grant) chooses what the
// next launch of each gets. The error names the file, the server and the
// grant. (The launcher checks only the plan it starts.)
func EnvFileOutsideProject(plans []*compiler.Plan, file, root, home string) error {
	if !filepath.IsAbs(file) {
		return fmt.Errorf("--env-file %q: not an absolute path", file)
	}
	return outsideProject(plans, file, root, home, outsideWords{
		what:   "the env file",
		read:   "read every server's secrets in it",
		write:  "read every server's secrets in it, and rewrite what the next launch of each gets",
		rather: "pass --env-file with a path outside every grant of the project",
	})
}

// BackupsOutsideProject refuses a backups folder (client --write's, see
// Save) in a grant of any server of the project: the backups are copies
// of client configs, tokens included, and what lies there --restore puts
// back.
func BackupsOutsideProject(plans []*compiler.Plan, dir, root, home string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%s: nowhere to keep a backup: set HOME or XDG_STATE_HOME (an absolute path)", dir)
	}
	return outsideProject(plans, dir, root, home, outsideWords{
		what:   "the backups folder",
		read:   "read the tokens of the client configs backed up there",
		write:  "read the tokens of the client configs backed up there, and plant what --restore puts back",
		rather: "set XDG_STATE_HOME to a folder outside every grant of the project",
	})
}

// outsideWords say what a file outside every grant is, and what a server
// that is given it could do.
type outsideWords struct{ what, read, write, rather string }

func outsideProject(plans []*compiler.Plan, file, root, home string, w outsideWords) error {
	m := compiler.Machine{ProjectRoot: root, Home: home}
	f := filepath.Clean(file)
	if g, in := launch.InsideAny(f, []string{root}); in {
		return fmt.Errorf("%s %s lies inside the project %s, which its servers are given: %s", w.what, f, g, w.rather)
	}
	for _, p := range plans {
		for _, mt := range p.Mounts {
			g := filepath.Clean(m.Resolve(mt.Source))
			if _, in := launch.InsideAny(f, []string{g}); !in {
				continue
			}
			how, could := "read-only", w.read
			if mt.Mode == compiler.ReadWrite {
				how, could = "read-write", w.write
			}
			return fmt.Errorf("%s %s lies inside %s, which server %q is given %s: it could %s; %s's servers", w.what, f, g, p.Server, how, could, w.rather)
		}
		if g, in := launch.InsideAny(f, p.Runtime.ReadOnly); in {
			return fmt.Errorf("%s %s lies inside %s, which server %q is given read-only: it could %s; %s's servers", w.what, f, g, p.Server, w.read, w.rather)
		}
	}
	return nil
}

func grantPaths(p *compiler.Plan, m compiler.Machine) []string {
	var out []string
	for _, mt := range p.Mounts {
		out = append(out, filepath.Clean(m.Resolve(mt.Source)))
	}
	return out
}

// shown is how an entry names a file of the project: through the client's
// workspace variable in a committed project file (r), as it is elsewhere.
func shown(r compiler.Resolver, root, file string) string {
	rel, err := filepath.Rel(root, file)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return file
	}
	return r.Resolve(compiler.HostPath{Base: compiler.ProjectRoot, Rel: filepath.ToSlash(rel)})
}

// LauncherName is the small launcher client entries run, installed beside
// mcpolicy (`go install ./cmd/...`).
const LauncherName = "mcpolicy-launch"

// Launcher returns the absolute path of mcpolicy-launch: beside the
// mcpolicy executable self, else on PATH.
func Launcher(self string) (string, error) {
	l := filepath.Join(filepath.Dir(self), LauncherName)
	if !installed(l) {
		if p, err := exec.LookPath(LauncherName); err == nil {
			if abs, err := filepath.Abs(p); err == nil && installed(abs) {
				return abs, nil
			}
		}
		if runtime.GOOS != "linux" {
			return "", fmt.Errorf("entries for bwrap, landlock, docker and podman start servers through %s, which runs on Linux only (it checks the artefact and the mount sources in Linux namespaces): on %s, write entries for the seatbelt backend (--backend seatbelt)", LauncherName, runtime.GOOS)
		}
		return "", fmt.Errorf("%s is not installed beside %s nor on PATH: client entries start servers through it (it checks the artefact and the mount sources before every launch); install both with `CGO_ENABLED=0 go install ./cmd/...`", LauncherName, self)
	}
	return l, nil
}

// readArtefact is os.ReadFile, replaced in tests.
var readArtefact = func(path string) ([]byte, error) { return hostfile.ReadRegular(path, hostfile.MaxArtefact) }

// installed reports whether an executable file is at p (replaced in tests).
var installed = func(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// pin checks that file holds the launch artefact want, as build writes
// it, and returns its digest; a stale file would make the entry refuse to
// start.
func pin(p *compiler.Plan, file string, want []byte) (string, error) {
	have, err := readArtefact(file)
	if err != nil || !bytes.Equal(have, want) {
		return "", fmt.Errorf("server %q: %s is missing or stale: run `mcpolicy build` first (the entry pins the artefact's digest)", p.Server, file)
	}
	return artefact.Digest(want), nil
}

// lookupEnv is os.Getenv, replaceable in tests.
var lookupEnv = os.Getenv

func absolute(cmd string) string {
	if p, err := exec.LookPath(cmd); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return cmd
}

// entryValue is the entry in the client's shape (encoding/json sorts
// its keys).
func entryValue(c *Client, l *Launch) (map[string]any, error) {
	e := map[string]any{}
	for k, v := range c.Stdio {
		e[k] = v
	}
	e["command"], e["args"], e["env"] = l.Command, l.Args, l.Env
	return e, nil
}

// launchKeys are the keys of an entry that say how the server starts:
// mcpolicy writes their values, and drops the old ones it does not write;
// every other key of its entry is the user's (c.Stdio's keys are launch
// keys too).
var launchKeys = map[string]bool{"command": true, "args": true, "env": true, "env_vars": true, "type": true}

// isLaunchKey reports whether key of an entry for c says how the server
// starts.
func isLaunchKey(c *Client, key string) bool {
	_, stdio := c.Stdio[key]
	return launchKeys[key] || stdio
}

// managedEntry reports whether a JSON entry is an object whose launch is
// mcpolicy's.
func managedEntry(n *node) bool {
	if n == nil || n.kind != kObject {
		return false
	}
	cmd, _ := n.get("command")
	var args []string
	if raw, _ := n.get("args"); raw != nil {
		for _, a := range raw.elems {
			args = append(args, a.str)
		}
	}
	return cmd != nil && cmd.kind == kString && Managed(cmd.str, args)
}

// ErrForeign refuses to replace an entry mcpolicy did not write.
type ErrForeign struct{ File, Server string }

func (e *ErrForeign) Error() string {
	return fmt.Sprintf("%s: entry %q was not written by mcpolicy: refusing to replace it (use --force)", e.File, e.Server)
}

// Managed reports whether an entry's launch is mcpolicy's: our wrappers,
// mcpolicy exec, or docker args carrying our plan label.
func Managed(command string, args []string) bool {
	all := command + " " + strings.Join(args, " ")
	return strings.Contains(all, docker.LabelPlan+"=") || strings.Contains(all, "/.mcpolicy/") ||
		strings.HasSuffix(command, "/"+LauncherName) ||
		(strings.HasSuffix(command, "mcpolicy") && len(args) > 0 && (args[0] == "exec" || args[0] == "run"))
}

// Merge writes the entry for server into a JSON/JSONC client file,
// changing nothing else: other entries, key order, comments and trailing
// commas stay byte for byte. src may be empty (a new file).
func Merge(file string, src []byte, c *Client, server string, l *Launch, force bool) ([]byte, error) {
	if c.Key == "" {
		return mergeTOML(file, src, server, l, force)
	}
	// A byte-order mark is read past and kept.
	mark := []byte{}
	if bytes.HasPrefix(src, bom) {
		mark, src = bom, src[len(bom):]
	}
	fresh := len(bytes.TrimSpace(src)) == 0
	orig := src
	if fresh {
		src = []byte("{}\n")
	}
	doc, err := readAsClient(c, file, src)
	if err != nil {
		return nil, err
	}
	servers, _ := doc.get(c.Key)
	existing, _ := servers.get(server)
	managed := managedEntry(existing)
	if existing != nil && !managed && !force {
		return nil, &ErrForeign{file, server}
	}
	v, err := hujson.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid JSON(C), left untouched: %v", file, err)
	}
	style := layoutOf(src)
	entry, err := entryValue(c, l)
	if err != nil {
		return nil, err
	}
	var out []byte
	switch {
	case managed:
		// mcpolicy's own entry: only how the server starts is rewritten;
		// what the user added to it ("disabled": true, a timeout,
		// auto-approved tools, comments) keeps its bytes.
		root, _ := v.Value.(*hujson.Object)
		obj := findObject(findObject(root, c.Key), server)
		if obj == nil {
			return nil, fmt.Errorf("%s: the entry %q is not where the file was read to hold it, left untouched (a bug: please report it with the file)", file, server)
		}
		launch := func(key string) bool { return isLaunchKey(c, key) }
		if err := style.rewriteEntry(obj, entry, launch); err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		out = v.Pack()
	case fresh: // a new file: nothing of the user's to keep, lay it all out
		b, err := style.render(map[string]any{c.Key: map[string]any{server: entry}}, 0)
		if err != nil {
			return nil, err
		}
		out = append(b, style.newline...)
	default:
		if out, err = style.insert(&v, c.Key, servers != nil, server, entry); err != nil {
			return nil, fmt.Errorf("%s: %v", file, err)
		}
		if !endsLine(out) {
			out = append(out, style.newline...)
		}
	}
	out = append(append([]byte{}, mark...), out...)
	before := doc
	if fresh {
		before = nil
	}
	if err := checkResult(c, file, append(append([]byte{}, mark...), orig...), out, server, entry, before); err != nil {
		return nil, err
	}
	return out, nil
}
