package importer

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// npx resolves `npx [-y] PKG ARGS` to the package npx already installed
// in its cache (~/.npm/_npx/HASH/node_modules/PKG), run with node: no npx
// at spawn, no network. Not in the cache: kept as written.
func (d *draft) npx(words []string) run {
	d.runtime("node", "npx packages run on node")
	d.pack("npx", "the npx runner: node's npm cache, read-only")
	d.scratch("node writes temporary files, and HOME is the scratch")
	pkg, i := "", 1
loop:
	for ; i < len(words); i++ {
		switch w := words[i]; {
		case w == "--":
			i++
			break loop
		case (w == "-p" || w == "--package") && i+1 < len(words):
			pkg = words[i+1]
			i++
		case strings.HasPrefix(w, "--package="):
			pkg = strings.TrimPrefix(w, "--package=")
		case w == "-c" || w == "--call":
			return d.keep(words, "npx --call runs a shell command line")
		case strings.HasPrefix(w, "-"):
		default:
			break loop
		}
	}
	if i >= len(words) {
		return d.keep(words, "npx names no package")
	}
	spec, rest := words[i], words[i+1:]
	bin := ""
	if pkg == "" {
		pkg = spec
	} else {
		bin = spec
	}
	name, version := npmSpec(pkg)
	if bin == "" {
		bin = name[strings.LastIndex(name, "/")+1:]
	}
	r := run{shape: shapeFor(name, "", "", "")}
	modules, script, got := d.npxInstalled(name, version, bin)
	if script == "" {
		r = d.keepRun(words, r, fmt.Sprintf("%s is not in the npx cache (%s) here, so npx would fetch it at each spawn, which the sandbox's network does not allow: run `npx -y %s --help` once, then import again", pkg, d.o.tilde(d.npxCache()), pkg))
		return r
	}
	d.addMount(modules, false, fmt.Sprintf("%s@%s and its dependencies, as npx installed them, read-only", name, got))
	cmd := append([]string{"node", d.o.tilde(script)}, rest...)
	d.node(cmd)
	d.p.CommandWhy = append(d.p.CommandWhy, fmt.Sprintf("`npx %s` resolved to %s@%s in the npx cache (%s), run directly with node: no npx at spawn, no network.", spec, name, got, d.o.tilde(filepath.Dir(modules))))
	r.command, r.argStart = cmd, 2
	return r
}

// keepRun is keep, with the shape already found.
func (d *draft) keepRun(words []string, r run, why string) run {
	k := d.keep(words, why)
	k.shape = r.shape
	return k
}

// npmSpec splits "@scope/name@1.2.3" into its name and version ("" when
// none, or a range).
func npmSpec(spec string) (name, version string) {
	at := strings.LastIndex(spec, "@")
	if at <= 0 {
		return spec, ""
	}
	return spec[:at], spec[at+1:]
}

func (d *draft) npxCache() string {
	if c := d.o.env("npm_config_cache"); c != "" {
		return filepath.Join(c, "_npx")
	}
	return filepath.Join(d.o.Home, ".npm", "_npx")
}

// npxInstalled finds name in the npx cache: its node_modules folder, the
// script its bin names, and its version. Of several installs, the one of
// the version asked for, else the newest, else the first by name.
func (d *draft) npxInstalled(name, version, bin string) (modules, script, got string) {
	dirs, _ := filepath.Glob(filepath.Join(d.npxCache(), "*", "node_modules", filepath.FromSlash(name), "package.json"))
	type cand struct {
		modules, script, version string
		mtime                    int64
	}
	var cs []cand
	for _, pj := range dirs {
		var m struct {
			Version string          `json:"version"`
			Bin     json.RawMessage `json:"bin"`
		}
		src, err := os.ReadFile(pj)
		if err != nil || json.Unmarshal(src, &m) != nil {
			continue
		}
		if version != "" && version != "latest" && strings.Trim(version, "0123456789.") == "" && m.Version != version {
			continue
		}
		rel := binOf(m.Bin, bin)
		if rel == "" {
			continue
		}
		pkgDir := filepath.Dir(pj)
		fi, _ := os.Stat(pkgDir)
		c := cand{modules: filepath.Dir(pkgDir), script: filepath.Join(pkgDir, filepath.FromSlash(rel)), version: m.Version}
		if strings.HasPrefix(name, "@") {
			c.modules = filepath.Dir(c.modules)
		}
		if fi != nil {
			c.mtime = fi.ModTime().UnixNano()
		}
		if exists(c.script) {
			cs = append(cs, c)
		}
	}
	if len(cs) == 0 {
		return "", "", ""
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].mtime != cs[j].mtime {
			return cs[i].mtime > cs[j].mtime
		}
		return cs[i].modules < cs[j].modules
	})
	return cs[0].modules, cs[0].script, cs[0].version
}

// binOf is the script package.json's "bin" names for the command bin: a
// string is the one command; of an object, bin's entry or its only one.
func binOf(raw json.RawMessage, bin string) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many map[string]string
	if json.Unmarshal(raw, &many) != nil {
		return ""
	}
	if s, ok := many[bin]; ok {
		return s
	}
	if len(many) == 1 {
		for _, s := range many {
			return s
		}
	}
	return ""
}

// uvValue are uv's options that take a value.
var uvValue = map[string]bool{"--from": true, "--with": true, "--with-editable": true, "--with-requirements": true,
	"--python": true, "-p": true, "--index": true, "--index-url": true, "--extra-index-url": true, "--directory": true,
	"--project": true, "--cache-dir": true, "--config-file": true}

// uvx resolves `uvx [--from SPEC] PKG ARGS` (or `uv tool run`, from word
// i) to the tool environment `uv tool install` made
// (~/.local/share/uv/tools/PKG/bin/CMD), run directly.
func (d *draft) uvx(words []string, i int) run {
	d.runtime("python", "uv tools run on python")
	d.pack("uvx", "the uv runner: its cache read-only, bytecode writes off")
	d.scratch("python writes temporary files, and HOME is the scratch")
	from := ""
	for ; i < len(words); i++ {
		w := words[i]
		name, val, joined := strings.Cut(w, "=")
		if uvValue[name] {
			if !joined && i+1 < len(words) {
				val = words[i+1]
				i++
			}
			if name == "--from" {
				from = val
			}
			continue
		}
		if !strings.HasPrefix(w, "-") {
			break
		}
	}
	if i >= len(words) {
		return d.keep(words, "uvx names no tool")
	}
	cmdName, rest := pyName(words[i]), words[i+1:]
	pkg := cmdName
	if from != "" {
		pkg = pyName(from)
	}
	tools := d.o.env("UV_TOOL_DIR")
	if tools == "" {
		tools = filepath.Join(d.dataHome(), "uv", "tools")
	}
	return d.venvTool(words, rest, tools, pkg, cmdName, "uv tool install", "uvx")
}

// pipx resolves `pipx run PKG ARGS` to the venv `pipx install` made.
func (d *draft) pipx(words []string) run {
	d.runtime("python", "pipx tools run on python")
	d.pack("pipx", "the pipx runner: its venvs read-only, bytecode writes off")
	d.scratch("python writes temporary files, and HOME is the scratch")
	i := 1
	for i < len(words) && strings.HasPrefix(words[i], "-") {
		i++
	}
	if i >= len(words) || words[i] != "run" {
		return d.keep(words, "not `pipx run`")
	}
	for i++; i < len(words) && strings.HasPrefix(words[i], "-"); i++ {
	}
	if i >= len(words) {
		return d.keep(words, "pipx run names no package")
	}
	home := d.o.env("PIPX_HOME")
	if home == "" {
		home = filepath.Join(d.dataHome(), "pipx")
	}
	pkg := pyName(words[i])
	return d.venvTool(words, words[i+1:], filepath.Join(home, "venvs"), pkg, pkg, "pipx install", "pipx run")
}

// dataHome is $XDG_DATA_HOME, else ~/.local/share.
func (d *draft) dataHome() string {
	if x := d.o.env("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return x
	}
	return filepath.Join(d.o.Home, ".local", "share")
}

// pyName is a Python requirement's project name: no extras, version or
// marker ("mcp-server-git[x]==1.0" -> "mcp-server-git").
func pyName(spec string) string {
	if i := strings.IndexAny(spec, "[=<>~!@; "); i > 0 {
		spec = spec[:i]
	}
	return strings.ToLower(spec)
}

// venvTool runs bin/CMD of the tool's virtualenv when it is there,
// granting the venv and the interpreter it links to.
func (d *draft) venvTool(words, rest []string, tools, pkg, cmdName, installer, runner string) run {
	r := run{shape: shapeFor("", pkg, "", "")}
	venv := filepath.Join(tools, pkg)
	script := filepath.Join(venv, "bin", cmdName)
	if !exists(script) {
		return d.keepRun(words, r, fmt.Sprintf("%s has no tool environment at %s here, so `%s` would fetch it at each spawn, which the sandbox's network does not allow: `%s %s`, then import again", pkg, d.o.tilde(venv), runner, installer, pkg))
	}
	d.addMount(venv, false, fmt.Sprintf("the tool environment %s made for %s, read-only", installer, pkg))
	if py, err := filepath.EvalSymlinks(filepath.Join(venv, "bin", "python")); err == nil && !underSystem(py) {
		// uv's own pythons (~/.local/share/uv/python/cpython-.../bin/python3.x):
		// the whole install, whose standard library lies beside it.
		d.addMount(filepath.Dir(filepath.Dir(py)), false, fmt.Sprintf("the python the tool environment links to (%s), read-only", d.o.tilde(py)))
	}
	cmd := append([]string{d.o.tilde(script)}, rest...)
	d.p.CommandWhy = append(d.p.CommandWhy, fmt.Sprintf("`%s %s` resolved to the tool environment %s made (%s): run directly, no %s at spawn, no network.", runner, pkg, installer, d.o.tilde(venv), runner))
	r.command, r.argStart = cmd, 1
	return r
}

// scratch gives the bounded scratch a runtime writes its temporary files to.
func (d *draft) scratch(why string) {
	if d.p.Scratch == nil {
		d.p.Scratch = &Scratch{Target: "/tmp", Size: "64m", Why: "bounded scratch: " + why}
	}
}

// program imports any other command: a Go binary (its build info says
// which module, the ELF whether it is static), node or python running a
// script, or a program as found on the user's PATH.
func (d *draft) program(words []string) run {
	cmd := append([]string{}, words...)
	prog := programName(words[0])
	r := run{command: cmd, argStart: 1}
	switch {
	case prog == "node" || prog == "nodejs":
		d.node(cmd)
		d.scratch("node writes temporary files, and HOME is the scratch")
		r.script = true
		return r
	case strings.HasPrefix(prog, "python"):
		d.runtime("python", "python runs the server")
		d.scratch("python writes temporary files, and HOME is the scratch")
		d.lookPath(cmd, "")
		r.script = len(words) > 1 && !strings.HasPrefix(words[1], "-")
		return r
	}
	abs := d.find(words[0])
	if abs == "" {
		return d.keep(words, words[0]+" is not found on your PATH here")
	}
	goPath, static := goBinary(abs)
	r.shape = shapeFor("", "", goPath, prog)
	switch {
	case goPath != "" && static:
		d.runtime("static", fmt.Sprintf("a static Go binary (%s, no loader): it needs nothing of /usr", goPath))
	case goPath != "":
		d.runtime("system", fmt.Sprintf("a Go binary (%s) linked dynamically: the system's loader and libraries", goPath))
	}
	d.lookPath(cmd, "")
	if r.shape != nil {
		for _, k := range r.shape.Packs {
			d.pack(k, r.shape.Name+": "+r.shape.Why)
		}
	}
	if goPath != "" {
		d.p.CommandWhy = append(d.p.CommandWhy, fmt.Sprintf("%s, found on your PATH: a Go binary of %s (its build info).", d.o.tilde(abs), goPath))
	}
	return r
}

// goBinary reads a program's Go build info: its main package path ("" when
// it is not a Go binary) and whether it is linked statically (no ELF
// interpreter).
func goBinary(file string) (path string, static bool) {
	bi, err := buildinfo.ReadFile(file)
	if err != nil {
		return "", false
	}
	f, err := elf.Open(file)
	if err != nil {
		return bi.Path, false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return bi.Path, false
		}
	}
	return bi.Path, true
}
