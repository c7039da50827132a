// Package entry writes mcpolicy's entries into MCP clients' files: it
// renders how a client starts a server (LaunchFor), merges that entry into
// the client's JSON, JSONC or TOML file changing nothing else (Merge), and
// replaces the file with a backup (Save, Restore). Reading client files,
// and the list of clients, is clientcfg's.
package entry

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"

	"github.com/tailscale/hujson"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// Launch is how an entry starts a server: an absolute command, its args,
// and the environment the wrapper needs from the client.
type Launch struct {
	Command string
	Args    []string
	Env     map[string]string
	EnvVars []string // names the client forwards (Codex's env_vars)
}

// workspacePaths renders project and home paths as a committed project
// file names them: by the client's variables (${workspaceFolder},
// ${userHome}), or relative to the root the client gives in the
// environment (root "."), never by this machine's paths.
type workspacePaths struct {
	root string // "${workspaceFolder}", or "."
	home string // "${userHome}", "${HOME}"
}

func (w workspacePaths) Resolve(p compiler.HostPath) string {
	switch p.Base {
	case compiler.ProjectRoot:
		if p.Rel == "." {
			return w.root
		}
		return w.root + "/" + p.Rel
	case compiler.Home:
		if p.Rel == "." {
			return w.home
		}
		return w.home + "/" + p.Rel
	}
	return p.Rel
}

// LaunchFor renders how a client starts the plan's server on a backend.
// portable (the project's own file, of a client that can name the project
// and home without this machine's paths: Client.Portable) names the
// launcher, the engine and bwrap without a path and the project and home
// by the client's variables, and sets no PATH nor engine address: the
// client passes its own environment. envFile
// is where the launcher takes env grant values from for a client that
// passes none ("": launch.EnvFileDefault).
func LaunchFor(c *clientcfg.Client, p *compiler.Plan, backend, root, home, outDir, self, envFile string, portable bool) (*Launch, error) {
	var r compiler.Resolver = compiler.Machine{ProjectRoot: root, Home: home}
	// mcpolicy run takes its root as a flag only: an egress entry of a
	// client that gives the root in the environment names it absolutely.
	portable = portable && c.Portable() && (c.Workspace != "" || p.Network.Mode != "allowlist")
	var rootFlag []string
	if portable {
		w := workspacePaths{root: c.Workspace, home: c.HomeVar}
		if w.root == "" {
			w.root, rootFlag = ".", []string{"--project-root-env", c.RootEnv}
		}
		r = w
	}
	b, err := registry.Lookup(backend)
	if err != nil {
		return nil, err
	}
	if !emit.BuiltFor(p, b) {
		return nil, fmt.Errorf("server %q is not built for backend %s (its backends: %s): add it to \"backends\" in the policy and run `mcpolicy build`, or pick one of those", p.Server, backend, strings.Join(p.Backends, ", "))
	}
	projectRoot := r.Resolve(compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."})
	l := &Launch{Env: map[string]string{}}
	var run *artefact.RunEntry // mcpolicy run's entry, for an egress server
	if p.Network.Mode == "allowlist" {
		// The egress proxy must run beside the server: mcpolicy run starts
		// both, and the forwarder it binds into the sandbox is this
		// executable, which must then be static.
		if err := b.Check(p); err != nil {
			return nil, err
		}
		// (Seatbelt binds no forwarder: its proxy listens on the host.)
		if b.Runtime().Sandbox != artefact.Seatbelt {
			if err := supervise.CheckStatic(self); err != nil {
				return nil, fmt.Errorf("server %q allows egress: %w", p.Server, err)
			}
		}
		// The entry pins the plan build wrote, as every other entry pins
		// its artefact: run starts it without reading the policy, and
		// refuses (exit 8) a file with other bytes.
		file := filepath.Join(outDir, "plan", p.Server+".json")
		digest, err := pin(p, file, p.JSON())
		if err != nil {
			return nil, err
		}
		run = &artefact.RunEntry{Backend: backend, ProjectRoot: projectRoot, PlanFile: shown(r, root, file), Digest: digest}
		l.Command, l.Args = self, artefact.RunEntryArgs(*run)
	} else {
		env := emit.EntryEnv{Paths: r, Root: projectRoot, RootFlag: rootFlag, Portable: portable, Out: outDir,
			Show:     func(file string) string { return shown(r, root, file) },
			Launcher: func() (string, error) { return Launcher(self) },
			Pin:      func(file string, want []byte) (string, error) { return pin(p, file, want) },
			Program: func(h compiler.HostPath) (string, error) {
				return launch.ProgramDigest(compiler.Machine{ProjectRoot: root, Home: home}.Resolve(h), root, home)
			},
			Abs: absolute}
		if portable {
			// Named, found on PATH at spawn; the one found now must be
			// installed (and is checked against the grants: Entries).
			env.Launcher = func() (string, error) {
				if _, err := Launcher(self); err != nil {
					return "", err
				}
				return clientcfg.LauncherName, nil
			}
			env.Abs = func(program string) string { return program }
		}
		cmd, err := b.Entry(p, env)
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
	// client's own environment where the client can say so. A granted
	// PATH is the user's: a client that passes its own environment gives
	// it (the entry sets none), and for one that expands nothing the
	// launcher takes it from the env file over this one (ClientOwnEnv).
	// A portable entry sets neither: its client passes its own
	// environment, and the launcher is found on that PATH.
	if !portable && (!slices.Contains(p.EnvNames(), "PATH") || (c.EnvRef == "" && !c.EnvVars)) {
		l.Env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	}
	// The engine's address and rootless podman's runtime folder: clients
	// do not pass them on, and without them the engine is not found.
	for _, name := range b.HostEnv() {
		if portable {
			break
		}
		if v := lookupEnv(name); v != "" {
			l.Env[name] = v
		}
	}
	// A credential's source variable reaches the launch as an env
	// grant's value does, by reference or from the env file, never by
	// value: mcpolicy run gives its value to the proxy alone.
	names := clientcfg.LaunchEnvNames(p)
	switch {
	case len(names) == 0:
	case c.EnvRef != "":
		for _, name := range names {
			l.Env[name] = fmt.Sprintf(c.EnvRef, name)
		}
	case c.EnvVars:
		l.EnvVars = names
	case !b.EnvFile():
		return nil, fmt.Errorf("server %q: %s passes no environment of its own and expands nothing, and the %s wrapper reads no env file: its env grants and credentials (%s) would reach the server empty; use a client that passes them (claude-code, cursor, vscode, gemini, codex) or another backend", p.Server, c.Name, backend, strings.Join(names, ", "))
	default:
		// The client cannot pass them: the launcher reads them from a file
		// the server cannot reach, at spawn (launch.EnvFile).
		if envFile == "" {
			envFile = launch.EnvFileDefault(home, lookupEnv("XDG_CONFIG_HOME"))
		}
		if err := envFileOutside(p, envFile, root, home); err != nil {
			return nil, err
		}
		if run != nil { // mcpolicy run: a flag of the subcommand
			run.EnvFile = envFile
			l.Args = artefact.RunEntryArgs(*run)
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

// Launcher returns the absolute path of mcpolicy-launch: beside the
// mcpolicy executable self, else on PATH.
func Launcher(self string) (string, error) {
	l := filepath.Join(filepath.Dir(self), clientcfg.LauncherName)
	if !installed(l) {
		if p, err := exec.LookPath(clientcfg.LauncherName); err == nil {
			if abs, err := filepath.Abs(p); err == nil && installed(abs) {
				return abs, nil
			}
		}
		if runtime.GOOS != "linux" {
			return "", fmt.Errorf("entries for bwrap, landlock, docker and podman start servers through %s, which runs on Linux only (it checks the artefact and the mount sources in Linux namespaces): on %s, write entries for the seatbelt backend (--backend seatbelt)", clientcfg.LauncherName, runtime.GOOS)
		}
		return "", fmt.Errorf("%s is not installed beside %s nor on PATH: client entries start servers through it (it checks the artefact and the mount sources before every launch); install both with `CGO_ENABLED=0 go install ./cmd/...`", clientcfg.LauncherName, self)
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
func entryValue(c *clientcfg.Client, l *Launch) (map[string]any, error) {
	e := map[string]any{}
	for k, v := range c.Stdio {
		e[k] = v
	}
	e["command"], e["args"], e["env"] = l.Command, l.Args, l.Env
	return e, nil
}

// ErrForeign refuses to replace an entry mcpolicy did not write.
type ErrForeign struct{ File, Server string }

func (e *ErrForeign) Error() string {
	return fmt.Sprintf("%s: entry %q was not written by mcpolicy: refusing to replace it (use --force)", e.File, e.Server)
}

// Merge writes the entry for server into a JSON/JSONC client file,
// changing nothing else: other entries, key order, comments and trailing
// commas stay byte for byte. src may be empty (a new file).
func Merge(file string, src []byte, c *clientcfg.Client, server string, l *Launch, force bool) ([]byte, error) {
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
	doc, err := clientcfg.ReadAsClient(c, file, src)
	if err != nil {
		return nil, err
	}
	hasServers, exists, managed := doc.Entry(c, server)
	if exists && !managed && !force {
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
		launch := func(key string) bool { return clientcfg.IsLaunchKey(c, key) }
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
		if out, err = style.insert(&v, c.Key, hasServers, server, entry); err != nil {
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
	if err := clientcfg.CheckResult(c, file, append(append([]byte{}, mark...), orig...), out, server, entry, before); err != nil {
		return nil, err
	}
	return out, nil
}
