// Package clientcfg reads the MCP client configs people already have
// (Claude Desktop, Claude Code, Cursor, VS Code, Windsurf, Cline, Gemini
// CLI, Zed, Codex) into lint targets: one per server entry, with its launch
// command read back into a plan where it is a confinement (docker or podman
// run, bwrap, sandbox-exec), and every fact the plan cannot hold as a flag
// at the position of the argument that says it.
package clientcfg

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
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
	return parseRecording(file, src, home, local, tol, nil)
}

// parseRecording is parseWith, calling record with each entry read
// (ReadLaunches keeps what it runs).
func parseRecording(file string, src []byte, home string, local bool, tol *tolerance, record func(*entry)) ([]*readback.Target, error) {
	r := &reader{file: file, tol: tol, record: record}
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

	if ext := strings.ToLower(filepath.Ext(file)); ext == ".yaml" || ext == ".yml" {
		return r.yaml(src)
	}
	if tol != nil && len(bytes.TrimSpace(bytes.TrimPrefix(src, bom))) == 0 {
		return nil, &schema.Error{Pos: position.Pos{File: file, Line: 1, Col: 1}, Msg: "an empty file: no server to lint; " + shapesHint}
	}
	if strings.EqualFold(filepath.Ext(file), ".toml") {
		root, err := parseTOML(file, src)
		if err != nil {
			return nil, err
		}
		servers, pos := root.get("mcp_servers")
		ts, err := r.section(servers, "mcp_servers", r.projectRoot, false)
		markDisabled(file, ts, servers, tol)
		if err == nil && len(ts) == 0 {
			err = tol.noServer(root, []section{{"mcp_servers", pos, servers}})
		}
		return ts, err
	}

	root, err := tol.parseJSON(file, src)
	if err != nil {
		return nil, err
	}
	if root.kind != kObject {
		return nil, typeError(root, "the top level", kObject)
	}
	tol.duplicates(root)
	r.fileSandbox, _ = root.get("sandbox")
	r.secretInputs = secretInputs(root) // secrets.go
	var ts []*readback.Target
	var seen []section
	add := func(n *node, pos position.Pos, where, project string, zed bool) error {
		if n == nil {
			return nil
		}
		seen = append(seen, section{where, pos, n})
		got, err := r.section(n, where, project, zed)
		markDisabled(r.file, got, n, r.tol)
		ts = append(ts, got...)
		return err
	}
	n, pos := root.get("mcpServers") // Claude, Cursor, Windsurf, Cline, Roo, Gemini; ~/.claude.json user scope
	if err := add(n, pos, "mcpServers", r.projectRoot, false); err != nil {
		return nil, err
	}
	n, pos = root.get("servers") // VS Code mcp.json, Copilot for JetBrains
	if err := add(n, pos, "servers", r.projectRoot, false); err != nil {
		return nil, err
	}
	mcp, mcpPos := root.get("mcp")
	if opencodeMCP(mcp) { // opencode: "mcp": {name: {"type": "local", "command": [...]}}
		if err := add(opencodeSection(mcp), mcpPos, "mcp", r.projectRoot, false); err != nil {
			return nil, err
		}
	} else { // VS Code settings.json: "mcp": {"servers": ...}
		n, pos = mcp.get("servers")
		if err := add(n, pos, "mcp.servers", r.projectRoot, false); err != nil {
			return nil, err
		}
	}
	n, pos = root.get("context_servers") // Zed
	if err := add(n, pos, "context_servers", r.projectRoot, true); err != nil {
		return nil, err
	}
	// Claude Code ~/.claude.json: local scope, per project folder.
	if projects, pos := root.get("projects"); projects != nil && projects.kind == kObject {
		seen = append(seen, section{"projects", pos, &node{kind: kObject, pos: projects.pos}})
		for _, i := range projects.members() {
			n, pos := projects.vals[i].get("mcpServers")
			dir := slash(projects.keys[i])
			if !isAbs(dir) {
				dir = ""
			}
			if err := add(n, pos, "projects."+projects.keys[i]+".mcpServers", dir, false); err != nil {
				return nil, err
			}
		}
	}
	if len(ts) == 0 {
		return nil, tol.noServer(root, seen)
	}
	return ts, nil
}

// yaml reads a YAML file given as a client config: a Kubernetes manifest
// (said in a note), Goose's config (its extensions:), or else an error.
func (r *reader) yaml(src []byte) ([]*readback.Target, error) {
	if kubernetes.LooksLikeManifest(src) {
		ts, err := ReadManifest(r.file, src)
		if err == nil {
			r.tol.noteIf(position.Pos{File: r.file, Line: 1, Col: 1}, "a Kubernetes manifest, not a client config: read as one (each container a server), as --manifest reads it")
		}
		return ts, err
	}
	root, err := parseYAML(r.file, src)
	if err != nil {
		return nil, err
	}
	ext, pos := root.get("extensions")
	if ext == nil {
		return nil, notClientYAML(root)
	}
	ts, err := r.section(r.tol.gooseSection(ext), "extensions", r.projectRoot, false)
	markDisabled(r.file, ts, ext, r.tol)
	if err == nil && len(ts) == 0 {
		err = r.tol.noServer(root, []section{{"extensions", pos, ext}})
	}
	return ts, err
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

// sandboxes are the programs that start a backend's sandbox in a
// hand-written entry (the backend table's), each with the kind of sandbox
// it starts (the registry's): the entry is read by that kind.
var sandboxes = func() map[string]artefact.Sandbox {
	m := map[string]artefact.Sandbox{}
	for _, b := range registry.All() {
		if prog := backendtraits.Program(b.Name()); prog != "" {
			m[prog] = b.Runtime().Sandbox
		}
	}
	// Programs that take an engine's run arguments, read as that engine
	// (docker.EngineAliases); not backends mcpolicy builds for.
	for prog := range docker.EngineAliases {
		m[prog] = artefact.Engine
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
	e.ran = append([]arg{cmd}, args...) // a wrapper's inner command calls launch again: the last one runs
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
		e.t.Launcher = readback.OwnLauncher
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
		e.t.Launcher = readback.OwnLauncher
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
	e.t.Launcher = readback.OwnLauncher
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
		case i+1 < len(args) && (a.s == "--engine" || a.s == "--unprotect" || a.s == "--sha256" || a.s == "--project-root" || a.s == "--project-root-env" || a.s == "--bwrap" || a.s == "--env-file" || a.s == "--"+artefact.ProgramFlag):
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
