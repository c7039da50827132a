package clientcfg

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// Reading a config's server entries: a section of them, and each entry's
// fields (command, args, env, headers, cwd, url) into a target. What the
// launch command says is read by launch (clientcfg.go) and the files it
// calls.

// reader reads one config's server entries.
type reader struct {
	paths
	tol      *tolerance // lint's tolerant read: an entry that cannot be read is skipped (nil: strict)
	file     string
	inherits func(string) bool // see readback.Target.EnvInherited
	literal  bool              // the client expands no ${VAR} in env values
	// secretInputs are a VS Code file's password inputs, by id (secrets.go).
	secretInputs map[string]bool
	// fileSandbox is a VS Code mcp.json's top-level "sandbox" object.
	fileSandbox *node
	// record, when set, is given each entry read (ReadLaunches).
	record func(*entry)
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
	ran     []arg // the command it runs and its arguments, past the wrappers read through
	// unexpanded are the HOME_NOT_EXPANDED flags of a launcher's
	// arguments, by index: a mount there is never made (literal.go).
	unexpanded []unexpanded
	// cwdRaw is the entry's cwd as written, whatever machine it names:
	// "." in its arguments is that folder (host.go).
	cwdRaw string
	// secrets: what the file says of references (secrets.go).
	secrets secretContext
}

func (e *entry) flag(k readback.FlagKind, v string, pos position.Pos) {
	e.t.Flags = append(e.t.Flags, readback.Flag{Kind: k, Value: v, Pos: pos})
}

// entry reads one server entry into a target: the fields every client
// shares, then either the remote server it names or its launch command.
func (r *reader) entry(section, name string, keyPos position.Pos, n *node, project string, zed bool) (*readback.Target, error) {
	f := fields(section + "." + schema.FieldPath(name))
	if n.kind != kObject {
		return nil, typeError(n, string(f), kObject)
	}
	e := r.newEntry(name, keyPos, project)
	cmdNode, argsNode, envNode, err := launchNodes(n, f, zed)
	if err != nil {
		return nil, err
	}
	// The fields are read in this order, so that of two wrong ones the
	// first is the error (a tolerant read skips the entry with it).
	command, err := f.str(cmdNode, "command")
	if err != nil {
		return nil, err
	}
	args, err := f.strs(argsNode, "args")
	if err != nil {
		return nil, err
	}
	if err := r.env(e, f, n, envNode); err != nil {
		return nil, err
	}
	e.extras(n, envNode, r.fileSandbox)
	e.t.EnvInherited = r.inherits
	for _, h := range []string{"headers", "http_headers"} {
		hn, _ := n.get(h)
		if err := e.inlineSecrets(f, hn, h); err != nil {
			return nil, err
		}
	}
	if err := e.readCwd(f, n); err != nil {
		return nil, err
	}
	if command == "" {
		t, err := e.commandless(f, n, keyPos, zed)
		if err == nil && r.record != nil {
			r.record(e)
		}
		return t, err
	}
	cmd, args := e.splitCommandString(arg{command, cmdNode.pos}, args)
	e.homeLiterals(cmd, args)
	e.launch(cmd, args)
	e.dropUnexpanded()
	e.clientVars(cmd, args) // literal.go: variables the client passes as written
	e.argSecrets(cmd, args) // secrets.go: tokens and passwords in argv
	e.argvSecretsHanded()   // host.go: a secret in an unconfined server's argv
	e.sortFlags()
	if r.record != nil {
		r.record(e)
	}
	return e.t, nil
}

// newEntry starts reading the entry name, written at keyPos, of a config
// whose project folder is project ("" for a user config).
func (r *reader) newEntry(name string, keyPos position.Pos, project string) *entry {
	e := &entry{paths: r.paths, name: name, secrets: secretContext{literal: r.literal, inputs: r.secretInputs}}
	e.projectRoot = project
	e.t = &readback.Target{Server: name, File: r.file, Pos: keyPos, Origin: readback.FromClient,
		ProjectRoot: filepath.FromSlash(project), Home: r.home}
	if e.home != "" {
		e.home = clean(slash(e.home))
	}
	return e
}

// fields is an entry's path in the config (mcpServers.name): its fields
// are read through it, so that an error names the field's own path.
type fields string

func (f fields) where(field string) string { return string(f) + "." + field }

// str reads a string field; a missing one is "".
func (f fields) str(n *node, field string) (string, error) {
	if n == nil {
		return "", nil
	}
	if n.kind != kString {
		return "", typeError(n, f.where(field), kString)
	}
	return n.str, nil
}

// strs reads a list of strings, each at its position.
func (f fields) strs(n *node, field string) ([]arg, error) {
	if n == nil {
		return nil, nil
	}
	if n.kind != kArray {
		return nil, typeError(n, f.where(field), kArray)
	}
	var as []arg
	for _, el := range n.elems {
		if el.kind != kString && el.kind != kOther {
			return nil, typeError(el, f.where(field)+" element", kString)
		}
		as = append(as, arg{el.str, el.pos})
	}
	return as, nil
}

// launchNodes returns the entry's command, args and env. Older Zed
// settings nest them in an object: "command": {"path", "args", "env"}.
func launchNodes(n *node, f fields, zed bool) (cmd, args, env *node, err error) {
	cmd, _ = n.get("command")
	args, _ = n.get("args")
	env, _ = n.get("env")
	if zed && isNull(env) { // Zed's env is optional: null is none, as Zed writes it
		env = nil
	}
	if !zed || cmd == nil || cmd.kind != kObject {
		return cmd, args, env, nil
	}
	obj := cmd
	cmd, _ = obj.get("path")
	if a, _ := obj.get("args"); a != nil {
		args = a
	}
	if v, _ := obj.get("env"); v != nil && !isNull(v) {
		env = v
	} else if v != nil {
		env = nil
	}
	if cmd == nil {
		return nil, nil, nil, &schema.Error{Pos: obj.pos, Path: f.where("command"), Msg: "a command object needs a \"path\""}
	}
	return cmd, args, env, nil
}

// isNull says n is a JSON null.
func isNull(n *node) bool { return n != nil && n.kind == kOther && n.str == "null" }

// inlineSecrets flags the values of an env or headers object that look
// like secrets written inline.
func (e *entry) inlineSecrets(f fields, n *node, field string) error {
	if n == nil {
		return nil
	}
	if n.kind != kObject {
		return typeError(n, f.where(field), kObject)
	}
	for _, i := range n.members() {
		v := n.vals[i]
		if v.kind == kObject || v.kind == kArray {
			return typeError(v, f.where(field+"."+n.keys[i]), kString)
		}
		if v.kind == kString {
			e.valueSecret(n.keys[i], v.str, n.keyPos[i], field == "env") // secrets.go
		}
	}
	return nil
}

// env reads the variables the entry passes the server: its env object's
// (with secrets written inline flagged), and Codex's env_vars, names
// forwarded from the client's own environment.
func (r *reader) env(e *entry, f fields, n, envNode *node) error {
	if err := e.inlineSecrets(f, envNode, "env"); err != nil {
		return err
	}
	if envNode != nil {
		for _, i := range envNode.members() {
			// "${NAME}" where the client expands nothing is the literal text.
			v := envNode.vals[i]
			if !r.literal || v.kind != kString || !isReference(v.str) || v.str == "" {
				e.t.EnvPassed = append(e.t.EnvPassed, envNode.keys[i])
			}
			if v.kind == kString && !isReference(v.str) && (r.literal || !mentionsReference.MatchString(v.str)) {
				e.t.EnvFixed = append(e.t.EnvFixed, envNode.keys[i])
			}
		}
	}
	if vars, _ := n.get("env_vars"); vars != nil {
		names, err := f.strs(vars, "env_vars")
		if err != nil {
			return err
		}
		for _, a := range names {
			e.t.EnvPassed = append(e.t.EnvPassed, a.s)
		}
	}
	return nil
}

// readCwd reads the folder the server starts in, as a path of this
// machine's when it is one.
func (e *entry) readCwd(f fields, n *node) error {
	cwdNode, _ := n.get("cwd")
	if cwdNode == nil {
		return nil
	}
	cwd, err := f.str(cwdNode, "cwd")
	if err != nil {
		return err
	}
	e.cwdRaw = cwd
	if p := e.file(cwd); p != "" {
		e.cwd = slash(p)
	}
	return nil
}

// commandless reads an entry without a command: a remote server, by its
// url (Claude, Cursor, VS Code, Gemini SSE, Codex, Zed), serverUrl
// (Windsurf) or httpUrl (Gemini streamable HTTP), or by its type alone; a
// Zed extension's server; or else an error.
func (e *entry) commandless(f fields, n *node, keyPos position.Pos, zed bool) (*readback.Target, error) {
	for _, k := range []string{"httpUrl", "url", "serverUrl"} {
		if u, _ := n.get(k); u != nil && u.kind == kString {
			e.t.Remote = u.str
			e.urlSecret(arg{u.str, u.pos}) // https://...?api_key=..., https://user:pass@...
			return e.t, nil
		}
	}
	if typ, _ := n.get("type"); typ != nil && typ.kind == kString {
		switch typ.str {
		case "http", "sse", "streamable-http", "streamableHttp":
			e.t.Remote = typ.str
			return e.t, nil
		}
	}
	if zed { // an extension's server: Zed starts what the extension says
		e.t.Launcher = "zed-extension"
		e.flag(readback.FlagUnconfined, "zed-extension", keyPos)
		return e.t, nil
	}
	return nil, &schema.Error{Pos: keyPos, Path: string(f), Msg: "server has neither \"command\" nor \"url\""}
}

// splitCommandString reads "command": "npx -y @x/server /path", a whole
// command line written in "command", with or without args: clients start
// the command without a shell, so they look for a program of that name
// and fail. It is reported (COMMAND_LINE_IN_COMMAND) and read split, as a
// shell would split it, every word at the command's position, when its
// first word is a program it is split for (launchers): a path with blanks
// (C:\Program Files\nodejs\npx.cmd) is a program's name, not a line.
func (e *entry) splitCommandString(cmd arg, args []arg) (arg, []arg) {
	if !strings.ContainsAny(cmd.s, " \t") {
		return cmd, args
	}
	words, _ := splitCommand(cmd.s, clientSplit)
	if len(words) == 0 || !launchers[program(words[0])] {
		return cmd, args
	}
	if len(words) > 1 {
		e.flag(readback.FlagCommandLine, cmd.s, cmd.pos)
	}
	var split []arg
	for _, w := range words[1:] {
		split = append(split, arg{w, cmd.pos})
	}
	return arg{words[0], cmd.pos}, append(split, args...)
}

// sortFlags puts the flags in the order of their positions in the file.
func (e *entry) sortFlags() {
	sort.SliceStable(e.t.Flags, func(i, j int) bool {
		a, b := e.t.Flags[i].Pos, e.t.Flags[j].Pos
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
}
