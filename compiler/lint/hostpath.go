package lint

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/credstore"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// A client config is usually written for a machine other than the one
// linting it: its paths are judged as written, for any platform, never by
// looking at this machine's files or comparing with this machine's $HOME.
// ReadHostPath is that reading: POSIX, macOS and Windows paths (C:\ and C:/),
// a home folder as a client or a shell writes it (~, ~user, $HOME, ${HOME},
// ${userHome}, ${env:HOME}, %USERPROFILE%), and the homes of every platform
// (/home/NAME, /Users/NAME, C:\Users\NAME, /root, WSL's /mnt/c/Users/NAME).

var (
	// homeVar is a home folder written as a variable or a tilde.
	homeVar = lazyre.New(`^(~([A-Za-z_][A-Za-z0-9._-]*)?|\$HOME\b|\$\{(HOME|USERPROFILE|userHome|env:HOME|env:USERPROFILE)(:-[^}]*)?\}|%USERPROFILE%|%HOMEDRIVE%%HOMEPATH%|%HOMEPATH%|\$env:(USERPROFILE|HOME)\b)`)
	// homeAbs is a home folder of some platform, and the user's name.
	homeAbs = lazyre.New(`^(/home/([^/]+)|/Users/([^/]+)|/root|/var/root|[A-Za-z]:/(?i:users)/([^/]+)|/mnt/[A-Za-z]/(?i:users)/([^/]+)|/[A-Za-z]/(?i:users)/([^/]+))(/|$)`)
	// homesDir is a folder that holds home folders.
	homesDir = lazyre.New(`^(/home|/Users|[A-Za-z]:/(?i:users)|/mnt/[A-Za-z]/(?i:users)|/[A-Za-z]/(?i:users))$`)
	// driveRoot is a whole Windows drive, as Windows or WSL writes it.
	driveRoot = lazyre.New(`^([A-Za-z]:/?|/mnt/[A-Za-z])$`)
	winDrive  = lazyre.New(`^[A-Za-z]:([\\/]|$)`)
)

// notHomes are folders where homes live that are no one's home.
var notHomes = map[string]bool{"shared": true, "public": true, "default": true, "default user": true,
	"all users": true, "linuxbrew": true}

// CredentialStores are where a home folder keeps keys and tokens, relative
// to it (credstore holds the list, shared with the exposure score).
var CredentialStores = credstore.Stores

// PathFacts is what a host path written in a config says on its own.
type PathFacts struct {
	// Path is the path slash-separated and clean, a leading home variable
	// kept as written; a Windows drive as C:/.
	Path string
	// Root: the whole filesystem, / or a Windows drive (C:\, C:/, /mnt/c).
	Root bool
	// Home is the home folder the path is or lies in, as written ("~",
	// "/Users/alice", "C:/Users/bob", or a home known to be the machine's),
	// "" when none; Sub is the rest below it, "." for the home itself.
	Home, Sub string
	// HoldsHomes: the path is a parent of home folders (/, a drive, /home,
	// /Users, C:\Users, the parent of ~).
	HoldsHomes bool
}

// IsHome reports whether the path is a home folder itself.
func (f PathFacts) IsHome() bool { return f.Home != "" && f.Sub == "." }

// Stores lists the credential stores ("~/.ssh", ...) the path is, lies in,
// or holds: every one for a folder that holds homes.
func (f PathFacts) Stores() []string {
	var hit []string
	for _, c := range CredentialStores {
		if f.HoldsHomes || f.Home != "" && (relWithin(f.Sub, c) || relWithin(c, f.Sub)) {
			hit = append(hit, "~/"+c)
		}
	}
	return hit
}

// relWithin reports whether the relative path p is dir or below it ("."
// holds every path).
func relWithin(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}

// SlashPath writes a host path with forward slashes when it is a Windows
// one (C:\..., \\server\..., %USERPROFILE%\...); a POSIX path is kept.
func SlashPath(p string) string {
	if strings.Contains(p, `\`) && !strings.HasPrefix(p, "/") {
		return strings.ReplaceAll(p, `\`, "/")
	}
	return p
}

// ReadHostPath reads a host path as written in a config, for any machine.
// homes are home folders known to be the machine's (absolute, e.g. the
// linting user's when the config is for this machine); a path under one
// of them is under a home whatever its form.
func ReadHostPath(p string, homes ...string) PathFacts {
	p = SlashPath(strings.TrimSpace(p))
	if p == "" {
		return PathFacts{Path: "."}
	}
	// Only a path starting with ~, $ or % can be a home variable: the
	// expression is spared every other argument lint reads.
	if c := p[0]; c == '~' || c == '$' || c == '%' {
		if m := homeVar.FindString(p); m != "" && (len(p) == len(m) || p[len(m)] == '/') {
			home := "~"
			if strings.HasPrefix(m, "~") {
				home = m
			}
			return belowHome(home, path.Clean("."+p[len(m):]))
		}
	}
	if winDrive.MatchString(p) {
		p = strings.ToUpper(p[:1]) + ":" + path.Clean("/"+p[2:])
	} else if strings.HasPrefix(p, "/") {
		p = path.Clean(p)
	} else {
		return PathFacts{Path: path.Clean(p)} // relative, or a variable: nothing known
	}
	special := mayHoldHome(p)
	f := PathFacts{Path: p, Root: p == "/" || special && driveRoot.MatchString(p), HoldsHomes: special && homesDir.MatchString(p)}
	f.HoldsHomes = f.HoldsHomes || f.Root
	for _, h := range homes {
		if h = SlashPath(h); h == "" || !strings.HasPrefix(h, "/") && !winDrive.MatchString(h) {
			continue
		}
		h = path.Clean(h)
		switch {
		case p == h || strings.HasPrefix(p, h+"/"):
			f.Home, f.Sub = h, relBelow(p, h)
			return f
		case strings.HasPrefix(h, p+"/") || p == "/":
			f.HoldsHomes = true
		}
	}
	if !special {
		return f
	}
	if m := homeAbs.FindStringSubmatch(p); m != nil {
		name := strings.Join(m[2:7], "")
		if !notHomes[strings.ToLower(name)] {
			f.Home, f.Sub = m[1], relBelow(p, m[1])
		}
	}
	return f
}

// mayHoldHome reports whether an absolute, clean path can be, or be in, a
// home, the folder of homes or a drive as homeAbs, homesDir and driveRoot
// read them: the cheap test that spares them most paths.
func mayHoldHome(p string) bool {
	switch {
	case len(p) >= 2 && p[1] == ':', // C:/...
		len(p) >= 2 && (len(p) == 2 || p[2] == '/') && isASCIILetter(p[1]), // /c/Users/... (MSYS)
		strings.HasPrefix(p, "/home"), strings.HasPrefix(p, "/Users"), strings.HasPrefix(p, "/root"),
		strings.HasPrefix(p, "/var/root"), strings.HasPrefix(p, "/mnt/"):
		return true
	}
	return false
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// belowHome reads rel below a home written as a variable: "..", the
// folder holding the home, holds homes; "../NAME" is another user's home.
func belowHome(home, rel string) PathFacts {
	written := home
	if rel != "." {
		written += "/" + rel
	}
	f := PathFacts{Path: written}
	parts := strings.Split(rel, "/")
	switch {
	case parts[0] != "..":
		f.Home, f.Sub = home, rel
	case len(parts) > 1 && parts[1] != "..":
		f.Home, f.Sub = home+"/../"+parts[1], "."
		if len(parts) > 2 {
			f.Sub = strings.Join(parts[2:], "/")
		}
	default:
		f.HoldsHomes = true
	}
	return f
}

func relBelow(p, dir string) string {
	if p == dir {
		return "."
	}
	return strings.TrimPrefix(p[len(dir):], "/")
}

// hostFacts reads a grant's host path: through the target's project and
// home folders when they are known, else as written (~/x for the home,
// nothing for a project folder no one knows).
func hostFacts(t *readback.Target, p compiler.HostPath) PathFacts {
	var homes []string
	if t.Home != "" {
		homes = append(homes, filepath.ToSlash(filepath.Clean(t.Home)))
	}
	switch {
	case p.Base == compiler.Home && t.Home == "":
		return belowHome("~", path.Clean(p.Rel))
	case p.Base == compiler.ProjectRoot && t.ProjectRoot == "":
		return PathFacts{Path: p.Placeholder()}
	case p.Base == compiler.Absolute, p.Base == compiler.ProjectRoot, p.Base == compiler.Home:
		return ReadHostPath(filepath.ToSlash(machine(t).Resolve(p)), homes...)
	}
	return PathFacts{Path: p.Placeholder()}
}

// hostOf is a grant's host path for the rules: the path on this machine
// when its base is known, else the placeholder (${PROJECT_ROOT}/x,
// ${HOME}/x), which names no folder here.
func hostOf(t *readback.Target, p compiler.HostPath) string {
	if p.Base == compiler.ProjectRoot && t.ProjectRoot == "" || p.Base == compiler.Home && t.Home == "" {
		return p.Placeholder()
	}
	return filepath.Clean(machine(t).Resolve(p))
}

// onMachine returns the folder or file at host on this machine, when the
// target's paths are known to be this machine's (a policy, a config in the
// project, --this-machine) and host is an absolute path of it.
func onMachine(t *readback.Target, host string) (string, bool) {
	if !t.OnThisMachine || !filepath.IsAbs(host) {
		return "", false
	}
	return host, true
}

var (
	// userRuntime is a user's runtime folder: /run/user/UID (any uid, or
	// $UID as written), or $XDG_RUNTIME_DIR as a config writes it.
	userRuntime = lazyre.New(`^((/var)?/run/user/([0-9]+|\$UID|\$\{UID\})|\$XDG_RUNTIME_DIR|\$\{(env:)?XDG_RUNTIME_DIR(:-[^}]*)?\})$`)
	// userTmp is the user's temporary folder as a config writes it.
	userTmp = lazyre.New(`^(\$TMPDIR|\$\{(env:)?TMPDIR(:-[^}]*)?\})$`)
)

// sharedFolder says what a host path (PathFacts.Path) is when it is a
// folder every program of the machine, or of a user, shares: its
// temporary folders, its shared memory, its runtime folders. Only the folders
// themselves: a folder below one (/tmp/myproject) is private, and a socket
// file below one (/var/run/docker.sock) is DOCKER_SOCKET's.
func sharedFolder(p string) (what string, ok bool) {
	switch p {
	case "/tmp", "/private/tmp":
		return "the temporary folder every program of the machine shares, with their unix sockets (X11's .X11-unix, tmux, ssh-agent) and temporary files, mcpolicy's own among them", true
	case "/var/tmp", "/private/var/tmp":
		return "the temporary folder every program of the machine shares, kept across reboots, with their temporary files", true
	case "/dev/shm", "/run/shm":
		return "the shared memory of every program of the machine (POSIX shared memory and semaphores)", true
	case "/run", "/var/run", "/private/var/run":
		return "the machine's runtime folder, with the system's unix sockets (the engine's docker.sock: root on the host; the system D-Bus) and every user's runtime folder", true
	case "/run/user", "/var/run/user":
		return "the folder of every user's runtime folder, with their sessions' unix sockets", true
	}
	switch {
	case userRuntime.MatchString(p):
		return "a user's runtime folder, which all of the user's programs share, with the session's unix sockets (D-Bus, Wayland, gpg-agent, ssh-agent, systemd --user, a rootless engine's)", true
	case userTmp.MatchString(p):
		return "the user's temporary folder, which all of the user's programs share, with their temporary files and unix sockets, mcpolicy's own among them", true
	}
	return "", false
}
