package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// EnvFile is where a client that cannot pass on its own environment (Claude
// Desktop, Windsurf, Zed, Cline start servers with a handful of variables
// and expand nothing) gets the values of a plan's env grants: a file of
// NAME=value lines the user keeps outside every grant, read by the
// launcher at spawn. The entry names the file; values never enter a client
// config, an artefact or an argv.
//
// A server must not be able to read the file (it holds other servers'
// secrets too) nor write it (it would choose what the next launch gets), so
// the launcher refuses, before starting anything, a file that
//   - is, or is reached through, a symlink (opened with RESOLVE_NO_SYMLINKS);
//   - is not a regular file, has another hard link (a link inside a grant
//     would reach it), or belongs to another user;
//   - can be read or written by the group or others (chmod 600);
//   - lies in a mount source of the plan, or the project.
type EnvFile struct {
	Path string
	// Grants are the host paths the plan mounts (and the project root):
	// the file must lie outside each.
	Grants []string
}

// EnvFileDefault is the file `mcpolicy client` names when the user gives
// none: $XDG_CONFIG_HOME/mcpolicy/env, else ~/.config/mcpolicy/env.
func EnvFileDefault(home, xdgConfig string) string {
	if xdgConfig != "" && filepath.IsAbs(xdgConfig) {
		return filepath.Join(xdgConfig, "mcpolicy", "env")
	}
	return filepath.Join(home, ".config", "mcpolicy", "env")
}

var envName = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// InsideAny reports the first of grants that file lies in (or is). Names
// are not enough: a grant named through a symlink (~/code -> /data/code),
// or a bind mount of it, holds the file under another spelling. So each
// grant is also resolved, and each folder above the file compared by
// device and inode with each grant.
func InsideAny(file string, grants []string) (string, bool) {
	file = filepath.Clean(file)
	real := file
	if r, err := filepath.EvalSymlinks(filepath.Dir(file)); err == nil {
		real = filepath.Join(r, filepath.Base(file))
	}
	var ancestors []os.FileInfo
	for d := file; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil {
			ancestors = append(ancestors, st)
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	under := func(p, g string) bool {
		return p == g || strings.HasPrefix(p, strings.TrimSuffix(g, "/")+"/")
	}
	for _, g := range grants {
		if g == "" {
			continue
		}
		g = filepath.Clean(g)
		if under(file, g) || under(real, g) {
			return g, true
		}
		if r, err := filepath.EvalSymlinks(g); err == nil && (under(file, r) || under(real, r)) {
			return g, true
		}
		gs, err := os.Stat(g)
		if err != nil {
			continue
		}
		for _, a := range ancestors {
			if os.SameFile(a, gs) {
				return g, true
			}
		}
	}
	return "", false
}

// ParseEnvFile reads NAME=value lines: blank lines and lines starting with
// # are skipped, an `export ` prefix is allowed, a value in matching single
// or double quotes loses them (nothing inside is expanded or unescaped). A
// line of any other shape is an error at file:line, which names no value.
func ParseEnvFile(file string, src []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		name, value, ok := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !ok || !envName.Regexp().MatchString(name) {
			return nil, fmt.Errorf("%s:%d: expected NAME=value (NAME of letters, digits and _)", file, line)
		}
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s is set twice", file, line, name)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// ClientOwnEnv are the variables a client that expands nothing passes a
// server of its own environment (Claude Desktop's and the MCP SDKs'
// default set; Codex's adds LANG, LC_ALL, TMPDIR, TZ and
// __CF_USER_TEXT_ENCODING), and the PATH an entry sets for the launcher:
// their values are the client's or the entry's, not the user's.
var ClientOwnEnv = map[string]bool{"HOME": true, "LOGNAME": true, "PATH": true, "SHELL": true, "TERM": true, "USER": true,
	"LANG": true, "LC_ALL": true, "TMPDIR": true, "TZ": true, "__CF_USER_TEXT_ENCODING": true}

// WithEnvFile returns environ with the file's values added for the names
// environ does not set: what the client passes wins, the file fills in —
// but for ClientOwnEnv's names, which the client sets whatever the user
// wants, the file's value wins where it names one (a granted PATH in the
// file reaches the server, not the entry's fixed one). With no file,
// environ is returned as it is.
func WithEnvFile(environ []string, f EnvFile, names []string) ([]string, error) {
	if f.Path == "" || len(names) == 0 {
		return environ, nil
	}
	var need []string
	for _, n := range names {
		if !hasEnv(environ, n) || ClientOwnEnv[n] {
			need = append(need, n)
		}
	}
	if len(need) == 0 {
		return environ, nil
	}
	vals, err := f.Load(need)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); ClientOwnEnv[name] {
			if _, ok := vals[name]; ok {
				continue // the file's value replaces the client's
			}
		}
		out = append(out, kv)
	}
	for _, n := range need {
		if v, ok := vals[n]; ok {
			out = append(out, n+"="+v)
		}
	}
	return out, nil
}

func hasEnv(environ []string, name string) bool {
	for _, kv := range environ {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// BwrapSources are the host paths a bwrap artefact binds, placeholders
// expanded (for EnvFile.Grants).
func BwrapSources(spec *BwrapSpec, root, home string) []string {
	var out []string
	for i := 0; i < len(spec.Args); i++ {
		a := spec.Args[i]
		if a == "--" {
			break
		}
		switch a {
		case "--bind", "--ro-bind", "--ro-bind-try":
			if i+1 < len(spec.Args) {
				p := spec.Args[i+1]
				p = strings.Replace(p, "${PROJECT_ROOT}", root, 1)
				p = strings.Replace(p, "${HOME}", home, 1)
				out = append(out, p)
			}
		}
		n, _ := artefact.BwrapOperands(a)
		i += n
	}
	return out
}

// EngineSources are the host paths docker/podman `run` arguments bind.
func EngineSources(args []string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--mount" {
			if m, err := artefact.ParseMount(args[i+1]); err == nil && m.Kind == "bind" {
				out = append(out, m.Source)
			}
			i++
		}
	}
	return out
}
