// Package clientcfg reads the MCP client configs people already have
// (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Cline, Gemini
// CLI, Zed, Codex) into lint targets: one per server entry, with its launch
// command read back into a plan where it is a confinement (docker or podman
// run, bwrap, sandbox-exec), and every fact the plan cannot hold as a flag
// at the position of the argument that says it.
package clientcfg

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/backends"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/backend"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// ProjectFiles are the project-scope client configs, relative to a project
// folder, that Discover looks for.
var ProjectFiles = []string{
	".mcp.json",             // Claude Code (and the portable Copilot format)
	".vscode/mcp.json",      // VS Code
	".cursor/mcp.json",      // Cursor
	".gemini/settings.json", // Gemini CLI
	".codex/config.toml",    // Codex (read for trusted projects only)
	".zed/settings.json",    // Zed
	".roo/mcp.json",         // Roo Code
}

// Discover returns the project-scope client configs that exist under dir.
func Discover(dir string) []string {
	var found []string
	for _, rel := range ProjectFiles {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			found = append(found, p)
		}
	}
	return found
}

// Read reads one MCP client config and returns one target per server
// entry. home is the home folder of the machine the config is for; paths
// under it become relative to HOME. The format is chosen by name: *.toml is
// Codex, anything else JSON with comments and trailing commas. A file with
// no MCP servers gives no targets. A file that does not parse, or an entry
// of the wrong shape, is an error at its file:line:col (a *schema.Error).
// The config is taken to be this machine's (mcpolicy check, client): lint
// reads with ReadLint (tolerant.go), which decides as ReadFor does, and
// repairs what is not JSON as written.
func Read(file, home string) ([]*readback.Target, error) {
	return ReadFor(file, Options{Home: home, ThisMachine: true})
}

// parse reads a config; local says its paths are this machine's (then home
// places its ~, and the files entries name are read), see ReadFor.
func parse(file string, src []byte, home string, local bool) ([]*readback.Target, error) {
	return parseWith(file, src, home, local, nil)
}

// parseWith is parse, tolerant when tol is set (lint, tolerant.go): the
// JSON is repaired, an entry that cannot be read skipped, each noted in tol.
func parseWith(file string, src []byte, home string, local bool, tol *tolerance) ([]*readback.Target, error) {
	r := &reader{file: file, tol: tol}
	r.local = local
	if local {
		r.home = home
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	r.configDir = slash(filepath.Dir(abs))
	r.projectRoot = projectOf(abs, home)
	r.inherits, r.literal = envInheritance(abs), literalEnv(abs)

	if ext := strings.ToLower(filepath.Ext(file)); (ext == ".yaml" || ext == ".yml") && kubernetes.LooksLikeManifest(src) {
		return ReadManifest(file, src)
	}
	if strings.EqualFold(filepath.Ext(file), ".toml") {
		root, err := parseTOML(file, src)
		if err != nil {
			return nil, err
		}
		servers, _ := root.get("mcp_servers")
		return r.section(servers, "mcp_servers", r.projectRoot, false)
	}

	root, err := tol.parseJSON(file, src)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, typeError(root, "the top level", kObject)
	}
	r.fileSandbox, _ = root.get("sandbox")
	var ts []*readback.Target
	add := func(n *node, where, project string, zed bool) error {
		got, err := r.section(n, where, project, zed)
		ts = append(ts, got...)
		return err
	}
	n, _ := root.get("mcpServers") // Claude, Cursor, Windsurf, Cline, Roo, Gemini; ~/.claude.json user scope
	if err := add(n, "mcpServers", r.projectRoot, false); err != nil {
		return nil, err
	}
	n, _ = root.get("servers") // VS Code mcp.json, Copilot for JetBrains
	if err := add(n, "servers", r.projectRoot, false); err != nil {
		return nil, err
	}
	mcp, _ := root.get("mcp") // VS Code settings.json: "mcp": {"servers": ...}
	n, _ = mcp.get("servers")
	if err := add(n, "mcp.servers", r.projectRoot, false); err != nil {
		return nil, err
	}
	n, _ = root.get("context_servers") // Zed
	if err := add(n, "context_servers", r.projectRoot, true); err != nil {
		return nil, err
	}
	// Claude Code ~/.claude.json: local scope, per project folder.
	if projects, _ := root.get("projects"); projects != nil && projects.kind == kObject {
		for _, i := range projects.members() {
			n, _ := projects.vals[i].get("mcpServers")
			dir := slash(projects.keys[i])
			if !isAbs(dir) {
				dir = ""
			}
			if err := add(n, "projects."+projects.keys[i]+".mcpServers", dir, false); err != nil {
				return nil, err
			}
		}
	}
	return ts, nil
}

// projectOf returns the project folder of a project-scope config (slash-
// separated), or "" for a user or global one: .mcp.json sits in it, the
// others in a dot-folder of it; that folder being the home folder makes it
// a user config (~/.cursor/mcp.json, ~/.gemini/settings.json...).
func projectOf(abs, home string) string {
	dir := filepath.Dir(abs)
	switch base := filepath.Base(abs); {
	case base == ".mcp.json":
	case strings.HasPrefix(filepath.Base(dir), ".") && filepath.Base(dir) != ".":
		switch filepath.Base(dir) + "/" + base {
		case ".vscode/mcp.json", ".cursor/mcp.json", ".gemini/settings.json", ".codex/config.toml",
			".zed/settings.json", ".roo/mcp.json", ".kilocode/mcp.json", ".windsurf/mcp.json":
			dir = filepath.Dir(dir)
		default:
			return ""
		}
	default:
		return ""
	}
	if home != "" && filepath.Clean(dir) == filepath.Clean(home) || lint.ReadHostPath(slash(dir)).IsHome() {
		return ""
	}
	return slash(filepath.Clean(dir))
}

type reader struct {
	paths
	tol      *tolerance // lint's tolerant read: an entry that cannot be read is skipped (nil: strict)
	file     string
	inherits func(string) bool // see readback.Target.EnvInherited
	literal  bool              // the client expands no ${VAR} in env values
	// fileSandbox is a VS Code mcp.json's top-level "sandbox" object.
	fileSandbox *node
}

// section reads the servers under one key: an object of name -> entry, or
// (Continue's style) a list of entries with a "name".
func (r *reader) section(n *node, where, project string, zed bool) ([]*readback.Target, error) {
	if n == nil {
		return nil, nil
	}
	var ts []*readback.Target
	switch n.kind {
	case kObject:
		for _, i := range n.members() {
			t, err := r.entry(where, n.keys[i], n.keyPos[i], n.vals[i], project, zed)
			if err != nil {
				if r.tol.skip(err) {
					continue
				}
				return ts, err
			}
			ts = append(ts, t)
		}
	case kArray:
		for _, e := range n.elems {
			name, _ := e.get("name")
			if name == nil || name.kind != kString {
				if err := (&schema.Error{Pos: e.pos, Path: where, Msg: "a server in a list needs a \"name\""}); !r.tol.skip(err) {
					return ts, err
				}
				continue
			}
			t, err := r.entry(where, name.str, e.pos, e, project, zed)
			if err != nil {
				if r.tol.skip(err) {
					continue
				}
				return ts, err
			}
			ts = append(ts, t)
		}
	default:
		if err := typeError(n, where, kObject); !r.tol.skip(err) {
			return nil, err
		}
	}
	return ts, nil
}

// arg is one launch-command argument and where it is written.
type arg struct {
	s   string
	pos position.Pos
}

// entry is one server entry being read.
type entry struct {
	paths
	hostRun // host.go: wrappers, client sandboxes, the variables it sets
	name    string
	t       *readback.Target
}

func (e *entry) flag(k readback.FlagKind, v string, pos position.Pos) {
	e.t.Flags = append(e.t.Flags, readback.Flag{Kind: k, Value: v, Pos: pos})
}

func (r *reader) entry(section, name string, keyPos position.Pos, n *node, project string, zed bool) (*readback.Target, error) {
	self := section + "." + schema.FieldPath(name)
	where := func(field string) string { return self + "." + field }
	if n.kind != kObject {
		return nil, typeError(n, self, kObject)
	}
	e := &entry{paths: r.paths, name: name}
	e.projectRoot = project
	e.t = &readback.Target{Server: name, File: r.file, Pos: keyPos, Origin: readback.FromClient,
		ProjectRoot: filepath.FromSlash(project), Home: r.home}
	if e.home != "" {
		e.home = clean(slash(e.home))
	}

	str := func(n *node, field string) (string, error) {
		if n == nil {
			return "", nil
		}
		if n.kind != kString {
			return "", typeError(n, where(field), kString)
		}
		return n.str, nil
	}
	strs := func(n *node, field string) ([]arg, error) {
		if n == nil {
			return nil, nil
		}
		if n.kind != kArray {
			return nil, typeError(n, where(field), kArray)
		}
		var as []arg
		for _, el := range n.elems {
			if el.kind != kString && el.kind != kOther {
				return nil, typeError(el, where(field)+" element", kString)
			}
			as = append(as, arg{el.str, el.pos})
		}
		return as, nil
	}
	// secrets flags values of an env or headers object that look inline.
	secrets := func(n *node, field string) error {
		if n == nil {
			return nil
		}
		if n.kind != kObject {
			return typeError(n, where(field), kObject)
		}
		for _, i := range n.members() {
			v := n.vals[i]
			if v.kind == kObject || v.kind == kArray {
				return typeError(v, where(field+"."+n.keys[i]), kString)
			}
			if v.kind == kString && looksLikeSecret(n.keys[i], v.str) {
				e.flag(readback.FlagSecretInline, n.keys[i], n.keyPos[i])
			}
		}
		return nil
	}

	cmdNode, _ := n.get("command")
	argsNode, _ := n.get("args")
	envNode, _ := n.get("env")
	if zed && cmdNode != nil && cmdNode.kind == kObject { // older Zed: "command": {"path", "args", "env"}
		obj := cmdNode
		cmdNode, _ = obj.get("path")
		if a, _ := obj.get("args"); a != nil {
			argsNode = a
		}
		if v, _ := obj.get("env"); v != nil {
			envNode = v
		}
		if cmdNode == nil {
			return nil, &schema.Error{Pos: obj.pos, Path: where("command"), Msg: "a command object needs a \"path\""}
		}
	}
	command, err := str(cmdNode, "command")
	if err != nil {
		return nil, err
	}
	args, err := strs(argsNode, "args")
	if err != nil {
		return nil, err
	}
	if err := secrets(envNode, "env"); err != nil {
		return nil, err
	}
	if envNode != nil {
		for _, i := range envNode.members() {
			// "${NAME}" where the client expands nothing is the literal text.
			if v := envNode.vals[i]; !r.literal || v.kind != kString || !isReference(v.str) || v.str == "" {
				e.t.EnvPassed = append(e.t.EnvPassed, envNode.keys[i])
			}
		}
	}
	if vars, _ := n.get("env_vars"); vars != nil { // Codex: names forwarded from its environment
		names, err := strs(vars, "env_vars")
		if err != nil {
			return nil, err
		}
		for _, a := range names {
			e.t.EnvPassed = append(e.t.EnvPassed, a.s)
		}
	}
	e.extras(n, envNode, r.fileSandbox)
	e.t.EnvInherited = r.inherits
	for _, h := range []string{"headers", "http_headers"} {
		hn, _ := n.get(h)
		if err := secrets(hn, h); err != nil {
			return nil, err
		}
	}
	if cwdNode, _ := n.get("cwd"); cwdNode != nil {
		cwd, err := str(cwdNode, "cwd")
		if err != nil {
			return nil, err
		}
		if f := e.file(cwd); f != "" {
			e.cwd = slash(f)
		}
	}

	// Remote: url (Claude, Cursor, VS Code, Gemini SSE, Codex, Zed),
	// serverUrl (Windsurf), httpUrl (Gemini streamable HTTP).
	typ, _ := n.get("type")
	for _, k := range []string{"httpUrl", "url", "serverUrl"} {
		if u, _ := n.get(k); u != nil && u.kind == kString && command == "" {
			e.t.Remote = u.str
			e.urlSecret(arg{u.str, u.pos}) // https://...?api_key=..., https://user:pass@...
			return e.t, nil
		}
	}
	if typ != nil && typ.kind == kString && command == "" {
		switch typ.str {
		case "http", "sse", "streamable-http", "streamableHttp":
			e.t.Remote = typ.str
			return e.t, nil
		}
	}
	if command == "" {
		if zed { // an extension's server: Zed starts what the extension says
			e.t.Launcher = "zed-extension"
			e.flag(readback.FlagUnconfined, "zed-extension", keyPos)
			return e.t, nil
		}
		return nil, &schema.Error{Pos: keyPos, Path: self, Msg: "server has neither \"command\" nor \"url\""}
	}
	if len(args) == 0 && strings.ContainsAny(command, " \t") {
		// "command": "docker run -i --rm img": most clients run it without
		// a shell and fail, some split it; read it split, every word at
		// the command's position.
		if words := splitCommandLine(command); len(words) > 0 && launchers[program(words[0])] {
			command = words[0]
			for _, w := range words[1:] {
				args = append(args, arg{w, cmdNode.pos})
			}
		}
	}
	e.homeLiterals(arg{command, cmdNode.pos}, args)
	e.launch(arg{command, cmdNode.pos}, args)
	e.argSecrets(arg{command, cmdNode.pos}, args) // secrets.go: tokens and passwords in argv
	sort.SliceStable(e.t.Flags, func(i, j int) bool {
		a, b := e.t.Flags[i].Pos, e.t.Flags[j].Pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	return e.t, nil
}

// sandboxes are the programs that start a backend's sandbox in a
// hand-written entry (the backend table's), each with the kind of sandbox
// it starts (the registry's): the entry is read by that kind.
var sandboxes = func() map[string]artefact.Sandbox {
	m := map[string]artefact.Sandbox{}
	for _, b := range backends.All() {
		if prog := backend.Program(b.Name()); prog != "" {
			m[prog] = b.Runtime().Sandbox
		}
	}
	return m
}()

// launchers are the programs a command string is split for.
var launchers = func() map[string]bool {
	m := map[string]bool{"mcpolicy": true,
		"npx": true, "uvx": true, "uv": true, "node": true, "python": true, "python3": true,
		"bunx": true, "bun": true, "deno": true, "pnpm": true, "yarn": true, "pipx": true,
	}
	for prog := range sandboxes {
		m[prog] = true
	}
	return m
}()

// program is the base name of a command, without a Windows extension.
func program(cmd string) string {
	base := path.Base(slash(cmd))
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			return base[:len(base)-len(ext)]
		}
	}
	return base
}

// ownWrapper reports whether cmd is a wrapper script mcpolicy build wrote.
func ownWrapper(cmd string) bool {
	s := slash(cmd)
	return strings.HasSuffix(s, ".sh") &&
		(strings.Contains("/"+s, "/.mcpolicy/bwrap/") || strings.Contains("/"+s, "/.mcpolicy/seatbelt/"))
}

// launch reads the launch command.
func (e *entry) launch(cmd arg, args []arg) {
	prog := program(cmd.s)
	kind, starts := sandboxes[prog]
	switch {
	case starts && kind == artefact.Engine:
		e.t.Launcher = prog
		e.docker(prog, cmd, args)
	case starts && kind == artefact.Bwrap:
		e.t.Launcher = prog
		e.bwrap(cmd, args)
	case starts && kind == artefact.Seatbelt:
		e.t.Launcher = prog
		e.sandboxExec(cmd, args)
	case prog == LauncherName:
		e.launcher(args)
	case prog == "mcpolicy" || prog == LauncherName || ownWrapper(cmd.s):
		e.t.Launcher = "mcpolicy" // the policy is linted on its own
		e.seatbeltWrapper(cmd)
		e.run(args)
		for i := 0; i+1 < len(args); i++ {
			if args[i].s == "--" {
				break
			}
			if args[i].s == "--env-file" {
				e.t.EnvFile = args[i+1].s
			}
		}
	case (prog == "sh" || prog == "bash" || prog == "dash" || prog == "zsh") && len(args) > 0 && ownWrapper(args[0].s):
		e.t.Launcher = "mcpolicy"
		e.seatbeltWrapper(args[0])
	default:
		e.host(prog, cmd, args) // host.go: wrappers, client sandboxes, unconfined
	}
}

// run reads an mcpolicy run entry: the plan file it pins and the digest
// (check compares them, as an artefact's), the earlier form that
// compiles the policy at each spawn, or another run line, which check
// reports: mcpolicy run starts what such a line adds.
func (e *entry) run(args []arg) {
	words := make([]string, len(args))
	for i, a := range args {
		words[i] = a.s
	}
	if artefact.LegacyRunEntry(words) {
		e.t.CompilesPolicy = true
		return
	}
	r, ok, err := artefact.ParseRunEntry(words)
	switch {
	case !ok:
		if len(words) > 0 && words[0] == "run" { // -p, --policy=, no --plan
			e.t.RunNotPinned = "it names no --sha256: nothing pins what it starts"
		}
	case err != nil:
		e.flag(readback.FlagUnknown, "mcpolicy "+strings.Join(words, " "), args[0].pos)
		e.t.RunNotPinned = err.Error()
	default:
		e.t.Artefact, e.t.Digest = r.PlanFile, r.Digest
		if f := e.file(r.PlanFile); f != "" { // ${workspaceFolder}/.mcpolicy/...
			e.t.Artefact = f
		}
	}
}

// labelUnprotected are the names an engine entry's run arguments unprotect
// (artefact.LabelUnprotect), at their positions.
func labelUnprotected(args []arg) []compiler.Unprotection {
	var out []compiler.Unprotection
	for i := 0; i+1 < len(args); i++ {
		if args[i].s == "--label" {
			if n, ok := strings.CutPrefix(args[i+1].s, artefact.LabelUnprotect+"="); ok {
				out = append(out, compiler.Unprotection{Name: n, Pos: args[i+1].pos})
			}
			i++
		}
	}
	return out
}

// launcher reads an mcpolicy-launch command line: --engine ENGINE ...
// --sha256 DIGEST ARTEFACT -- run ARGS (the engine's arguments are what
// confine the server: read them; the launcher runs them only when they are
// the pinned artefact's), or --sha256 DIGEST ARTEFACT (the policy is
// linted on its own; check compares the artefact with the digest).
func (e *entry) launcher(args []arg) {
	e.t.Launcher = "mcpolicy"
	var engine *arg
	var unprotected []compiler.Unprotection
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a.s == "--" && engine != nil:
			e.t.Launcher = program(engine.s)
			e.docker(e.t.Launcher, *engine, args[i+1:])
			if e.t.Plan != nil {
				// The launcher leaves writable the names the arguments'
				// labels carry; a --unprotect flag (refused at launch)
				// is kept too, so that check reports it as drift.
				e.t.Plan.Unprotected = append(labelUnprotected(args[i+1:]), unprotected...)
			}
			e.t.FixedTop = true // the launcher fixes the project's top level
			return
		case i+1 < len(args) && (a.s == "--engine" || a.s == "--unprotect" || a.s == "--sha256" || a.s == "--project-root" || a.s == "--bwrap" || a.s == "--env-file" || a.s == "--"+artefact.ProgramFlag):
			v := args[i+1]
			i++
			switch a.s {
			case "--engine":
				engine = &v
			case "--unprotect":
				unprotected = append(unprotected, compiler.Unprotection{Name: v.s, Pos: v.pos})
			case "--sha256":
				e.t.Digest = v.s
			case "--env-file":
				e.t.EnvFile = v.s
			}
		case a.s == "-v":
		case !strings.HasPrefix(a.s, "-") && (i == len(args)-1 || engine != nil && args[i+1].s == "--"):
			e.t.Artefact = a.s
			if f := e.file(a.s); f != "" { // ${workspaceFolder}/.mcpolicy/...
				e.t.Artefact = f
			}
		default:
			e.flag(readback.FlagUnknown, LauncherName+" "+a.s, a.pos)
			return
		}
	}
	if engine != nil {
		e.flag(readback.FlagUnknown, LauncherName+" --engine without --", engine.pos)
	}
}
