package importer

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// run is what a command resolved to: the words the policy runs, where the
// server's own arguments start in them, and the shape that matched.
type run struct {
	command  []string
	argStart int
	shape    *Shape
	script   bool // the first argument is a script the runtime runs (node x.js)
}

// host imports an entry that runs a command on the host, unconfined.
func (o Options) host(l *clientcfg.Launch, s *Server) {
	if l.SecretInArgv() {
		s.Skipped = "a secret is written in its command line (lint's SECRET_INLINE): import copies the command into the policy, so it imports none; move the value into the entry's env, then import again"
		return
	}
	for _, f := range l.Target.Flags {
		if f.Kind == readback.FlagHostGrant {
			s.Skipped = "it is handed a path too wide for a policy import writes: " + f.Value + "; give it the folders it needs instead, then import again"
			return
		}
	}
	if l.ClientSandbox {
		s.Notes = append(s.Notes, "the entry runs under a client's sandbox (srt or VS Code's): the policy confines it instead, and the client entry `client --write` writes drops that wrapper")
	}
	d := o.newDraft(l, s)
	words := make([]string, len(l.Argv))
	for i, w := range l.Argv {
		words[i] = w.S
	}
	d.p.Description = "imported: " + d.o.tildeWords(words)
	var r run
	switch prog := programName(words[0]); prog {
	case "npx":
		r = d.npx(words)
	case "uvx":
		r = d.uvx(words, 1)
	case "uv":
		if len(words) > 2 && words[1] == "tool" && words[2] == "run" {
			r = d.uvx(words, 3)
		} else {
			r = d.keep(words, "uv runs a project, not a tool: its folder and environment are not known to import")
		}
	case "pipx":
		r = d.pipx(words)
	case "deno":
		r = d.deno(words)
	default:
		r = d.program(words)
	}
	if s.Skipped != "" {
		return
	}
	d.p.Command = r.command
	d.argPaths(r)
	d.env(r.shape)
	if len(d.p.Allow) > 0 {
		d.p.Backends = Items{[]string{backendtraits.Bwrap}, "an egress allowlist: Landlock cannot filter destinations, so bwrap alone (mcpolicy run starts the proxy beside it)"}
	}
	d.finish()
}

// programName is a command's base name without a Windows extension.
func programName(cmd string) string {
	base := filepath.Base(filepath.FromSlash(cmd))
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		if strings.HasSuffix(strings.ToLower(base), ext) {
			return base[:len(base)-len(ext)]
		}
	}
	return base
}

// keep runs the command as written, saying why it was not resolved.
func (d *draft) keep(words []string, why string) run {
	d.p.CommandWhy = append(d.p.CommandWhy, "As written in the entry: "+why+".")
	cmd := append([]string{}, words...)
	d.lookPath(cmd, "")
	return run{command: cmd, argStart: 1}
}

// lookPath finds cmd[0] on the user's PATH, and makes it a word the
// sandbox can run: a program under /usr stays a bare name (the runtime
// binds /usr and the sandbox's PATH finds it), one elsewhere becomes its
// path, granted read-only (its whole install for node and deno, whose
// libraries lie beside them). It returns the program's path on this
// machine ("" when not found).
func (d *draft) lookPath(cmd []string, install string) string {
	abs := d.find(cmd[0])
	if abs == "" {
		d.s.Notes = append(d.s.Notes, fmt.Sprintf("%s is not on your PATH here: the policy runs it by name, which the sandbox's PATH (/usr/local/bin:/usr/bin:/bin) must find", cmd[0]))
		return ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		real = abs
	}
	if underSystem(real) && d.p.Runtime.Value != "static" {
		if filepath.Dir(abs) != "/usr/bin" && filepath.Dir(abs) != "/bin" && filepath.Dir(abs) != "/usr/local/bin" {
			cmd[0] = abs
		}
		return real
	}
	if install != "" {
		d.addMount(install, false, fmt.Sprintf("%s, as installed at %s (not under /usr, which the runtime binds)", programName(cmd[0]), d.o.tilde(install)))
	} else {
		d.addMount(real, false, fmt.Sprintf("the program %s, found on your PATH as %s", programName(cmd[0]), d.o.tilde(abs)))
	}
	cmd[0] = d.o.tilde(real)
	return real
}

// find is the path on this machine of a command word: a path as the
// entry would reach it, or a name on the user's PATH.
func (d *draft) find(word string) string {
	if strings.ContainsRune(word, '/') || strings.HasPrefix(word, "~") {
		if f := d.l.File(word); f != "" && exists(f) {
			return f
		}
		return ""
	}
	for _, dir := range filepath.SplitList(d.o.Path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, word)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// node makes cmd[0] ("node") runnable in the sandbox: the system's, or an
// install elsewhere (nvm, volta), granted whole.
func (d *draft) node(cmd []string) {
	d.runtime("node", "node runs the server")
	abs := d.find(cmd[0])
	if abs == "" {
		d.lookPath(cmd, "")
		return
	}
	real, _ := filepath.EvalSymlinks(abs)
	if real == "" || underSystem(real) {
		return
	}
	d.lookPath(cmd, filepath.Dir(filepath.Dir(real)))
}

func (d *draft) runtime(name, why string) {
	if d.p.Runtime.Value == "" {
		d.p.Runtime = Item{name, why}
	}
}

func (d *draft) pack(name, why string) {
	for _, k := range d.p.Packs {
		if k.Value == name {
			return
		}
	}
	d.p.Packs = append(d.p.Packs, Item{name, why})
}

// argPaths grants the paths among the server's own arguments: each that
// exists here, at the same path in the sandbox, read-only unless the
// shape says the server writes there. An argument written relative to
// the client's folder or with a variable the client expands
// (${workspaceFolder}) is rewritten to the path it named: nothing expands
// it in the sandbox.
func (d *draft) argPaths(r run) {
	args := r.command[r.argStart:]
	for i := 0; i < len(args); i++ {
		w := args[i]
		name, val, joined := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !strings.HasPrefix(w, "-") {
			val, joined = w, true
		}
		if !joined {
			continue
		}
		sh := r.shape
		if sh != nil && sh.URLArgs {
			d.urlGrant(val, sh.Name+": "+sh.Why)
		}
		writes, why := false, ""
		switch {
		case sh != nil && sh.WritesFlag != "" && strings.HasPrefix(w, "-") && name == sh.WritesFlag:
			writes, why = true, sh.Name+": "+sh.Why
		case sh != nil && sh.WritesFlag != "" && i > 0 && strings.TrimLeft(args[i-1], "-") == sh.WritesFlag && !strings.Contains(args[i-1], "="):
			writes, why = true, sh.Name+": "+sh.Why
		case sh != nil && sh.WritesArgs && !strings.HasPrefix(w, "-"):
			writes, why = true, sh.Name+": "+sh.Why
		}
		var f string
		if writes && sh.FolderToo { // the folder, not the file: a read-only file in it would stay so
			if f = d.l.File(val); f != "" && !d.wide(filepath.Dir(f), "the folder of "+val) && isDir(filepath.Dir(f)) {
				d.addMount(filepath.Dir(f), true, fmt.Sprintf("the folder of %s; writable because %s", d.o.tilde(f), why))
			}
		} else {
			f = d.argPath(val, "the argument", writes, why, r.script && i == 0)
		}
		if f == "" || strings.HasPrefix(val, "/") || strings.HasPrefix(val, "~/") || val == "~" {
			continue
		}
		if strings.HasPrefix(w, "-") {
			args[i] = w[:len(w)-len(val)] + f
		} else {
			args[i] = d.o.tilde(f)
		}
	}
}

// argPath grants one path an argument (or a value: what) names, and
// returns it ("" when it is no path of this machine's).
func (d *draft) argPath(raw, what string, writes bool, why string, script bool) string {
	if !pathLike(raw) {
		return ""
	}
	f := d.l.File(raw)
	if f == "" {
		return ""
	}
	if d.wide(f, what+" "+raw) {
		return ""
	}
	shown := d.o.tilde(f)
	switch {
	case script && exists(f):
		d.addMount(filepath.Dir(f), false, fmt.Sprintf("the folder of the script %s (the modules it loads lie beside it), read-only", shown))
	case writes && exists(f):
		d.addMount(f, true, fmt.Sprintf("%s %s; writable because %s", what, shown, why))
	case writes && isDir(filepath.Dir(f)):
		d.addMount(filepath.Dir(f), true, fmt.Sprintf("the folder of %s %s, which does not exist yet: %s, and creates it", what, shown, why))
	case exists(f):
		d.addMount(f, false, fmt.Sprintf("%s %s, read-only: no known shape of this server writes there (make it \"rw\" if it must)", what, shown))
	default:
		d.s.Notes = append(d.s.Notes, fmt.Sprintf("%s %s does not exist here: not granted", what, shown))
	}
	return f
}

// pathLike reports whether a word is written as a path.
func pathLike(s string) bool {
	return s == "." || s == "~" || strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/") ||
		strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "$HOME/") ||
		strings.HasPrefix(s, "${HOME}/") || strings.HasPrefix(s, "${workspaceFolder}")
}

// env turns the variables the entry sets into grants: a reference to the
// client's environment a name, a secret a name whose value goes to the env
// file, a constant a setenv value (a path granted, a URL's host an egress
// destination).
func (d *draft) env(sh *Shape) {
	for _, e := range d.l.Env {
		switch {
		case launch.ClientOwnEnv[e.Name]:
			d.s.Notes = append(d.s.Notes, fmt.Sprintf("the entry sets %s: not imported (the sandbox sets its own %s; grant it by name in env if the server needs yours)", e.Name, e.Name))
		case !e.HasValue:
			d.p.Env = append(d.p.Env, Item{e.Name, "the client forwards it from its own environment (env_vars)"})
		case e.Reference:
			d.p.Env = append(d.p.Env, Item{e.Name, fmt.Sprintf("the entry passes it from the client's environment (%s)", e.Value)})
		case e.Secret || secretToImport(e.Name, e.Value):
			d.p.Env = append(d.p.Env, Item{e.Name, "a secret the entry held inline: its value is in the env file, never in a policy"})
			d.s.Secrets = append(d.s.Secrets, Secret{e.Name, e.Value})
		default:
			d.constant(e, sh)
		}
	}
}

// constant grants a fixed, non-secret value.
func (d *draft) constant(e clientcfg.EnvSetting, sh *Shape) {
	why := "a constant the entry set"
	if sh != nil && sh.WritesEnv == e.Name {
		d.argPath(e.Value, "the file "+e.Name+" names,", true, sh.Name+": "+sh.Why, false)
		why += "; the file it names is granted read-write (" + sh.Name + ")"
	} else if pathLike(e.Value) {
		d.argPath(e.Value, "the path "+e.Name+" names,", false, "", false)
		why += "; the path it names is granted at the same path"
	} else if d.urlGrant(e.Value, fmt.Sprintf("%s names %s: the server reaches it", e.Name, e.Value)) {
		why += "; its host is an egress destination"
	}
	d.p.SetEnv = append(d.p.SetEnv, Pair{e.Name, e.Value, why})
}

// urlGrant makes the host of an http(s) URL an egress destination,
// host:port (the scheme's port when none is written); false when s is no
// such URL.
func (d *draft) urlGrant(s, why string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	dest := u.Hostname() + ":" + port
	if strings.Contains(u.Hostname(), ":") {
		dest = "[" + u.Hostname() + "]:" + port
	}
	d.addAllow(dest, why)
	return true
}

func (d *draft) addAllow(dest, why string) {
	for _, a := range d.p.Allow {
		if a.Value == dest {
			return
		}
	}
	d.p.Allow = append(d.p.Allow, Item{dest, why})
}
