package seatbelt

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"mvdan.cc/sh/v3/syntax"
)

// ScratchPlaceholder stands, in the .json arguments, for the private folder
// the wrapper makes at launch (mktemp -d, resolved as macOS resolves it:
// /private/var/folders/...). It is never spelled from $TMPDIR, whose
// trailing slash and /var spelling would make a path seatbelt does not match.
const ScratchPlaceholder = "${SCRATCH}"

// Args returns the arguments after /usr/bin/sandbox-exec, with host paths
// rendered by r (canonicalised when absolute). profile is the .sb file's
// path as the caller will pass it.
func Args(p *compiler.Plan, pr *Profile, r compiler.Resolver, profile string) ([]string, error) {
	words, err := translate(p)
	if err != nil {
		return nil, err
	}
	a := []string{"-f", profile}
	for _, pa := range pr.Params {
		v := ScratchPlaceholder // made by whoever runs this argv
		if !pa.Scratch {
			v = r.Resolve(pa.Path)
			if pa.Path.Base == compiler.Absolute {
				v = Canonical(v)
			}
		}
		a = append(a, "-D", pa.Name+"="+v)
	}
	a = append(a, "--")
	for _, w := range words {
		switch {
		case w.scratch:
			a = append(a, w.flag+ScratchPlaceholder+w.rel)
		case w.host:
			a = append(a, w.flag+r.Resolve(w.path))
		default:
			a = append(a, w.text)
		}
	}
	for _, s := range a {
		if err := emit.CheckSafe(p.Server, "argument", s); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// word is one argument of the command as seatbelt will run it: as written,
// or (seatbelt, like Landlock, runs with host paths) the host path a
// sandbox path under a mount target shows, or a path in the scratch folder.
type word struct {
	text    string            // as written
	flag    string            // what precedes the path: "--flag=", or ""
	host    bool              // a path under a mount: path
	path    compiler.HostPath //
	scratch bool              // a path in the scratch folder: $SCRATCH then rel
	rel     string            // "" or "/below"
}

// translate maps every argument naming a sandbox path, whole or after
// "--flag=", to the host path it shows; a sandbox path it cannot map (inside
// a longer word: a list, a glued short option) is refused with its position
// rather than passed on to a server that would not find it.
func translate(p *compiler.Plan) ([]word, error) {
	out := make([]word, len(p.Command))
	for i, a := range p.Command {
		out[i] = word{text: a}
		flag, v := "", a
		if i > 0 && !strings.HasPrefix(a, "/") {
			if f, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(val, "/") {
				flag, v = f+"=", val
			}
		}
		hits := sandboxPaths(p, a)
		if isSandboxPath(p, v) && (len(hits) == 1 || i == 0) {
			// The whole word (or value), and no other sandbox path in it.
			w := word{text: a, flag: flag}
			if hp, ok := p.HostPathOf(v); ok {
				w.host, w.path = true, hp
			} else {
				w.scratch, w.rel = true, strings.TrimPrefix(v, strings.TrimSuffix(p.Scratch.Target, "/"))
			}
			out[i] = w
			continue
		}
		if i == 0 || len(hits) == 0 {
			continue // the program as written, or a word that names no sandbox path
		}
		return nil, &emit.NotEnforceableError{Pos: p.Pos, Field: fmt.Sprintf("%s[%d]", p.Field("command"), i),
			Server: p.Server, Backend: Backend,
			Restriction: fmt.Sprintf("argument %q names the sandbox path %s inside a longer word (seatbelt runs with host paths, and translates a path only as a whole argument or after --flag=)", a, hits[len(hits)-1]),
			Alternative: "pass the path as an argument of its own, or as --flag=PATH (both become the host path); or use bwrap or docker, which remap paths"}
	}
	return out, nil
}

// sandboxPaths returns the sandbox paths (under a mount target or the
// scratch target) s holds: the whole word, or a piece that starts after a
// separator (=, :, ",", ;) or a glued short option (-I/path) and runs to the
// next separator.
func sandboxPaths(p *compiler.Plan, s string) []string {
	var found []string
	if isSandboxPath(p, s) {
		found = append(found, s)
	}
	for j := 1; j < len(s); j++ {
		if s[j] != '/' || !(strings.IndexByte("=:,;", s[j-1]) >= 0 || (j == 2 && s[0] == '-' && isLetter(s[1]))) {
			continue
		}
		piece := s[j:]
		if end := strings.IndexAny(piece, ":,;"); end >= 0 {
			piece = piece[:end]
		}
		if isSandboxPath(p, piece) {
			found = append(found, piece)
		}
	}
	return found
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isSandboxPath reports whether s is at or below a mount target or the
// scratch target.
func isSandboxPath(p *compiler.Plan, s string) bool {
	if _, ok := p.HostPathOf(s); ok {
		return true
	}
	if p.Scratch == nil {
		return false
	}
	t := p.Scratch.Target
	return s == t || strings.HasPrefix(s, strings.TrimSuffix(t, "/")+"/")
}

// SearchPath is the wrapper's PATH for a runtime baseline. Where the
// baseline grants Homebrew (node, python), its bin comes first, then the
// nodejs.org and python.org installers' /usr/local/bin, then the system's:
// /usr/bin/python3 and /usr/bin/git are xcrun shims that load the
// developer tools and fail in a sandbox (microsoft/mxc#1110). Elsewhere the
// system's folders come first, the ones the baseline lets it run.
func SearchPath(runtime string) []string {
	sys, brew := []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin"}, []string{"/opt/homebrew/bin", "/usr/local/bin"}
	switch runtime {
	case "node", "python":
		return append(brew, sys...)
	}
	return append(sys, brew...)
}

// xcrunShims are the /usr/bin programs that are xcrun shims on macOS: a
// command naming one by its bare name gets a note from the wrapper when
// PATH finds nothing better.
var xcrunShims = map[string]bool{"python3": true, "pip3": true, "git": true, "make": true, "clang": true, "cc": true, "swift": true}

// xcrunShim returns the command's program when it is a bare name that
// /usr/bin serves with an xcrun shim.
func xcrunShim(p *compiler.Plan) string {
	if c := p.Command[0]; !strings.Contains(c, "/") && xcrunShims[c] {
		return c
	}
	return ""
}

// shellPath renders a host path as a shell word: ${PROJECT_ROOT} and
// ${HOME} stay variables, the rest is quoted.
func shellPath(hp compiler.HostPath) (string, error) {
	if hp.Base == compiler.Absolute {
		return quoteSh(Canonical(hp.Rel))
	}
	w := `"${` + string(hp.Base) + `}"`
	if hp.Rel != "." {
		q, err := quoteSh("/" + hp.Rel)
		if err != nil {
			return "", err
		}
		w += q
	}
	return w, nil
}

func quoteSh(s string) (string, error) {
	if err := emit.CheckSafe("", "path", s); err != nil {
		return "", err
	}
	return syntax.Quote(s, syntax.LangPOSIX)
}

// Wrapper returns a POSIX shell script that starts the server under
// sandbox-exec: it refuses to run as root, resolves every path as macOS
// does (seatbelt matches resolved paths), makes the scratch folder, and
// execs sandbox-exec through env -i with PATH, HOME (TMPDIR, with an
// egress allowlist the proxy variables) and the granted variables only.
// It runs alike under sh (dash, bash 3.2 in POSIX mode), bash and zsh.
// rootFromScript is the project root relative to the script's folder.
func Wrapper(p *compiler.Plan, pr *Profile, rootFromScript string) ([]byte, error) {
	capture, grantedArgs, err := grantedEnv(p)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", p.Server, err)
	}
	var b strings.Builder
	writePreamble(&b, p, capture, rootFromScript)
	defs, err := writeParams(&b, p, pr)
	if err != nil {
		return nil, err
	}
	if err := writeWorkdir(&b, p); err != nil {
		return nil, err
	}
	if err := writeEgressNote(&b, p); err != nil {
		return nil, err
	}
	_, fixed, err := fixedEnv(p)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", p.Server, err)
	}
	words, err := commandWords(p)
	if err != nil {
		return nil, err
	}
	writeShimCheck(&b, p)
	// The one start of the server: env -i, then sandbox-exec by absolute path.
	lines := append([]string{"exec " + Env + " -i " + grantedArgs}, fixed...)
	lines = append(lines, SandboxExec+` -f "$here/`+p.Server+`.sb"`)
	lines = append(lines, defs...)
	lines = append(lines, "-- "+strings.Join(words, " "))
	b.WriteString(strings.Join(lines, " \\\n    ") + "\n")
	return []byte(b.String()), nil
}

// writePreamble writes what every wrapper starts with: the header, the
// captured variables, the script's folder and the project's, the refusal
// to run as root, and the shell functions canon and same.
func writePreamble(b *strings.Builder, p *compiler.Plan, capture, rootFromScript string) {
	fmt.Fprintf(b, `#!/bin/sh
# Generated by mcpolicy build; do not edit.
# Starts MCP server %q under macOS seatbelt, confined as its plan says:
#   %s  (mcpolicy explain %s)
set -eu
%shere=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd -P)
: "${PROJECT_ROOT:=$(CDPATH= cd -- "$here/%s" && pwd -P)}"
if [ "$(id -u)" -eq 0 ]; then
  echo 'mcpolicy: refusing to start server %s as root' >&2
  exit 4
fi
# Seatbelt matches resolved paths (/tmp is /private/tmp): resolve each one.
canon() {
  if [ -d "$1" ]; then (CDPATH= cd -- "$1" && pwd -P)
  else printf '%%s/%%s\n' "$(CDPATH= cd -- "$(dirname -- "$1")" && pwd -P)" "$(basename -- "$1")"
  fi
}
# A source below the project or the home must resolve to itself: one that
# is (or passes through) a symlink, swapped in by a server that writes
# beside it, is refused (exit 8), as mcpolicy-launch refuses it on Linux.
same() {
  [ "$1" = "$2" ] || { echo "mcpolicy: refused: $2 is, or passes through, a symlink (it resolves to $1): refusing to start server %s" >&2; exit 8; }
}
`, p.Server, p.Hash, p.Server, capture, rootFromScript, p.Server, p.Server)
}

// writeParams defines each of the profile's parameters as the resolved
// path (a source below the project or the home checked to be no symlink;
// the scratch made), and returns their -D arguments.
func writeParams(b *strings.Builder, p *compiler.Plan, pr *Profile) ([]string, error) {
	var defs []string
	for _, pa := range pr.Params {
		if pa.Scratch {
			b.WriteString("SCRATCH=$(canon \"$(mktemp -d \"${TMPDIR:-/tmp}/mcpolicy-scratch.XXXXXX\")\")\n")
		} else {
			w, err := shellPath(pa.Path)
			if err != nil {
				return nil, fmt.Errorf("server %q: %w", p.Server, err)
			}
			fmt.Fprintf(b, "%s=$(canon %s)\n", pa.Name, w)
			if pa.Path.Base != compiler.Absolute && pa.Path.Rel != "." {
				base := "PROJECT_ROOT"
				if pa.Path.Base == compiler.Home {
					base = "HOME"
				}
				rel, err := quoteSh("/" + pa.Path.Rel)
				if err != nil {
					return nil, fmt.Errorf("server %q: %w", p.Server, err)
				}
				fmt.Fprintf(b, "same \"$%s\" \"$(canon \"$%s\")\"%s\n", pa.Name, base, rel)
			}
		}
		defs = append(defs, fmt.Sprintf(`-D "%s=$%s"`, pa.Name, pa.Name))
	}
	return defs, nil
}

// writeWorkdir enters the workdir, while PROJECT_ROOT and HOME are still
// the caller's: seatbelt runs with host paths, so it must lie in a mount.
func writeWorkdir(b *strings.Builder, p *compiler.Plan) error {
	if p.Workdir == "" {
		return nil
	}
	hp, ok := p.HostPathOf(p.Workdir)
	if !ok {
		return &emit.NotEnforceableError{Pos: p.Pos, Server: p.Server, Backend: Backend,
			Restriction: fmt.Sprintf("workdir %s outside every mount (seatbelt runs with host paths)", p.Workdir),
			Alternative: "set workdir to a mount target or a folder below one"}
	}
	w, err := shellPath(hp)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "cd %s\n", w)
	return nil
}

// writeEgressNote says, for an egress allowlist, that the server reaches
// only the proxy, and how to start it with one.
func writeEgressNote(b *strings.Builder, p *compiler.Plan) error {
	if p.Network.Mode != "allowlist" {
		return nil
	}
	name, err := quoteSh(p.Server)
	if err != nil {
		return fmt.Errorf("server %q: %w", p.Server, err)
	}
	fmt.Fprintf(b, "# The profile lets the server reach only mcpolicy's egress proxy on 127.0.0.1:%d,\n"+
		"# which checks every destination. Start it with: mcpolicy run --server %s --backend seatbelt\n"+
		"# (that runs the proxy). Started otherwise, it reaches nothing, or whatever else holds that port.\n", p.Network.ProxyPort, name)
	return nil
}

// commandWords are the server's command as shell words: host paths
// resolved by the script, scratch paths below $SCRATCH, the rest quoted.
func commandWords(p *compiler.Plan) ([]string, error) {
	cmd, err := translate(p)
	if err != nil {
		return nil, err
	}
	var words []string
	for _, w := range cmd {
		var word string
		switch {
		case w.host:
			word, err = shellPath(w.path)
		case w.scratch:
			word = `"$SCRATCH"`
			if w.rel != "" {
				var q string
				q, err = quoteSh(w.rel)
				word += q
			}
		default:
			word, err = quoteSh(w.text)
		}
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", p.Server, err)
		}
		if w.flag != "" {
			q, err := quoteSh(w.flag)
			if err != nil {
				return nil, fmt.Errorf("server %q: %w", p.Server, err)
			}
			word = q + word
		}
		words = append(words, word)
	}
	return words, nil
}

// writeShimCheck warns, where the command resolves to an xcrun shim in
// /usr/bin, that it cannot start in the sandbox.
func writeShimCheck(b *strings.Builder, p *compiler.Plan) {
	shim := xcrunShim(p)
	if shim == "" {
		return
	}
	fmt.Fprintf(b, `# /usr/bin/%[1]s is an xcrun shim, which cannot start in the sandbox (it loads the developer tools).
case "$(PATH=%[2]s; command -v %[1]s || true)" in
  /usr/bin/%[1]s) echo 'mcpolicy: %[1]s resolves to /usr/bin/%[1]s, an xcrun shim that fails in the sandbox (unable to load libxcrun): install a real one (brew install ...), or write its absolute path in command' >&2 ;;
esac
`, shim, strings.Join(SearchPath(p.Runtime.Name), ":"))
}
