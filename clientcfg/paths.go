package clientcfg

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// paths turns host paths written in an entry into compiler.HostPaths.
type paths struct {
	configDir   string // folder of the config file, slash-separated
	projectRoot string // absolute, slash-separated; "" when unknown
	home        string // absolute, slash-separated; "" when unknown
	cwd         string // the entry's cwd, expanded; "" when not set
	// local: the config's paths are this machine's (see OnThisMachine);
	// otherwise the reader opens no file an entry names.
	local bool
}

// Variables that stand for the project folder or the home folder at the
// start of a path, as the clients (and mcpolicy's own artefacts) write them:
// VS Code and Cursor ${workspaceFolder}, Claude Code ${CLAUDE_PROJECT_DIR}
// (also with a :-default), mcpolicy ${PROJECT_ROOT}; ${userHome}, $HOME,
// ${env:HOME}, %USERPROFILE% and ~ for the home folder.
var (
	projectVar = lazyre.New(`^(\$\{(workspaceFolder|workspaceRoot|PROJECT_ROOT|CLAUDE_PROJECT_DIR|env:CLAUDE_PROJECT_DIR|env:PROJECT_ROOT)(:-[^}]*)?\}|\$(PROJECT_ROOT|CLAUDE_PROJECT_DIR)\b)`)
	homeVar    = lazyre.New(`^(\$\{(userHome|HOME|env:HOME|env:USERPROFILE|USERPROFILE)(:-[^}]*)?\}|\$HOME\b|%USERPROFILE%|~)`)
	winAbs     = lazyre.New(`^[A-Za-z]:[\\/]`)
)

func slash(p string) string {
	if winAbs.MatchString(p) || strings.HasPrefix(p, `\\`) {
		return strings.ReplaceAll(p, `\`, "/")
	}
	return filepath.ToSlash(p)
}

func isAbs(p string) bool { return strings.HasPrefix(p, "/") || winAbs.MatchString(p) }

// clean cleans a slash-separated absolute or relative path.
func clean(p string) string {
	if winAbs.MatchString(p) {
		return p[:2] + path.Clean(p[2:])
	}
	return path.Clean(p)
}

// expandBasename replaces ${workspaceFolderBasename} when the project is known.
func (ps *paths) expandBasename(s string) string {
	if ps.projectRoot != "" {
		s = strings.ReplaceAll(s, "${workspaceFolderBasename}", path.Base(ps.projectRoot))
	}
	return s
}

// rest returns what follows a leading variable when it is the whole path or
// is followed by a separator.
func rest(s string, re *lazyre.RE) (string, bool) {
	m := re.FindString(s)
	if m == "" {
		return "", false
	}
	r := s[len(m):]
	if r != "" && r[0] != '/' && r[0] != '\\' {
		return "", false
	}
	return slash(r), true
}

// relTo returns "." or the clean remainder below a base ("/x/y" -> "x/y").
func relTo(r string) string {
	return path.Clean("." + r)
}

// hostPath reads a host path as written in a launch command. A path under
// the project root (when known) is relative to PROJECT_ROOT, one under the
// home folder relative to HOME, the rest absolute. A relative path is taken
// from the entry's cwd, else the project root, else the config's folder. A
// path that still holds a variable the reader cannot resolve (${input:x},
// ${env:FOO}), or names another user's home (~bob/x), is kept as written
// with Base Absolute: lint reads it as written (lint.ReadHostPath).
func (ps *paths) hostPath(raw string) compiler.HostPath {
	s := ps.expandBasename(raw)
	if r, ok := rest(s, projectVar); ok {
		if ps.projectRoot == "" {
			return compiler.HostPath{Base: compiler.ProjectRoot, Rel: relTo(r)}
		}
		s = ps.projectRoot + r
	} else if r, ok := rest(s, homeVar); ok {
		if ps.home == "" {
			return compiler.HostPath{Base: compiler.Home, Rel: relTo(r)}
		}
		s = ps.home + r
	}
	s = slash(s)
	if !isAbs(s) {
		if strings.ContainsAny(s, "$%") || strings.HasPrefix(s, "~") { // ~bob/x: another user's home, as written
			return compiler.HostPath{Base: compiler.Absolute, Rel: raw}
		}
		dir := ps.baseDir()
		if dir == "" {
			return compiler.HostPath{Base: compiler.Absolute, Rel: raw}
		}
		s = path.Join(dir, s)
	}
	return ps.classify(clean(s))
}

// baseDir is the folder relative paths are taken from.
func (ps *paths) baseDir() string {
	switch {
	case ps.cwd != "":
		return ps.cwd
	case ps.projectRoot != "":
		return ps.projectRoot
	}
	return ps.configDir
}

func (ps *paths) classify(abs string) compiler.HostPath {
	if ps.projectRoot != "" && within(abs, ps.projectRoot) {
		return compiler.HostPath{Base: compiler.ProjectRoot, Rel: rel(abs, ps.projectRoot)}
	}
	if ps.home != "" && within(abs, ps.home) {
		return compiler.HostPath{Base: compiler.Home, Rel: rel(abs, ps.home)}
	}
	return compiler.HostPath{Base: compiler.Absolute, Rel: abs}
}

func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

func rel(p, dir string) string {
	if p == dir {
		return "."
	}
	return strings.TrimPrefix(p[len(dir):], "/")
}

// file returns the path on this machine of a file named in a launch
// command (a seatbelt profile, an env file); "" when it cannot be known.
func (ps *paths) file(raw string) string {
	hp := ps.hostPath(raw)
	switch hp.Base {
	case compiler.ProjectRoot:
		if ps.projectRoot == "" {
			return ""
		}
	case compiler.Home:
		if ps.home == "" {
			return ""
		}
	default:
		if !isAbs(hp.Rel) {
			return ""
		}
	}
	return filepath.FromSlash(compiler.Machine{ProjectRoot: ps.projectRoot, Home: ps.home}.Resolve(hp))
}

// localFile returns the path on this machine of a file the reader opens (an
// env file, a sandbox profile): "" when the config is not known to be for
// this machine, or the path cannot be known.
func (ps *paths) localFile(raw string) string {
	if !ps.local {
		return ""
	}
	return ps.file(raw)
}

// notRead says, for a message, why a file an entry names was not read: ""
// on this machine, where the reason is the path's.
func (ps *paths) notRead() string {
	if ps.local {
		return ""
	}
	return " (not read: the config is not known to be this machine's; lint --this-machine reads it)"
}
