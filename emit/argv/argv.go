// Package argv is what the reverse parsers beside the emitters (docker's
// and podman's run arguments, bwrap's) share with the client reader that
// calls them: a word of a command line where the config wrote it, and the
// entry being read, which owns its paths, environment and findings.
package argv

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Arg is one word of a launch command line.
type Arg struct {
	S   string
	Pos position.Pos
}

// Entry is the client entry a command line is read into.
type Entry interface {
	// Server is the entry's name; Target what the reading yields, the
	// parser filling in the plan and what lint needs besides.
	Server() string
	Target() *readback.Target
	Flag(k readback.FlagKind, v string, pos position.Pos)
	// HostPath classifies a path as the entry wrote it.
	HostPath(raw string) compiler.HostPath
	// LocalFile is the path on this machine of a file to read (an env
	// file), "" when it cannot be read; NotRead says why, for a message.
	LocalFile(raw string) string
	NotRead() string
	// DangerousArgs and DangerousEnv flag dangerous-mode switches among
	// the server's own arguments and variables.
	DangerousArgs(args []Arg, onHost bool)
	DangerousEnv(name, value string, pos position.Pos)
	// EnvKeys are the variables the entry itself sets (its "env"), by name.
	EnvKeys() []Arg
	// Secret reports whether name=value holds a secret inline.
	Secret(name, value string) bool
	// Plumbing reports whether a variable is the launcher's or the
	// runtime's own (PATH, DOCKER_HOST...), not one the server needs.
	Plumbing(name string) bool
}

// IsWinAbs reports whether p is a Windows drive path (C:\ or C:/).
func IsWinAbs(p string) bool {
	return len(p) >= 3 && ('A' <= p[0] && p[0] <= 'Z' || 'a' <= p[0] && p[0] <= 'z') && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

// Slash makes a path slash-separated, a Windows one too.
func Slash(p string) string {
	if IsWinAbs(p) || strings.HasPrefix(p, `\\`) {
		return strings.ReplaceAll(p, `\`, "/")
	}
	return filepath.ToSlash(p)
}

// IsAbs reports whether a slash-separated path is absolute (a drive's too).
func IsAbs(p string) bool { return strings.HasPrefix(p, "/") || IsWinAbs(p) }

// Within reports whether p is dir or below it.
func Within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// Rel is p relative to dir, which holds it.
func Rel(p, dir string) string {
	if p == dir {
		return "."
	}
	return strings.TrimPrefix(p[len(dir):], "/")
}

// Caps splits a capability list (podman and bwrap take commas) into names
// without the CAP_ prefix, upper case.
func Caps(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_")
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// EngineSockets are the base names of container engines' and their
// runtimes' API sockets: docker's and podman's, containerd's (nerdctl,
// finch, Kubernetes nodes), CRI-O's and BuildKit's. Each starts a
// container with / mounted, or runs a build step as root.
var EngineSockets = []string{"docker.sock", "podman.sock", "containerd.sock", "crio.sock", "buildkitd.sock"}

// EngineSocket reports whether p is a container engine's API socket.
func EngineSocket(p string) bool {
	b := path.Base(Slash(p))
	for _, s := range EngineSockets {
		if b == s {
			return true
		}
	}
	return strings.Contains(p, "docker_engine")
}
