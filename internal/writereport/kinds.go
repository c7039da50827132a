package writereport

import (
	"path/filepath"
	"strings"
)

// Flags: the kinds of entry a host runs or trusts, and the places a walk
// cannot see into. Each is a reason to read the entry before anything on
// the host (python, npm, make, direnv, git, a shell) runs in the project.
const (
	FlagBytecode   = "bytecode"      // *.pyc, __pycache__: python runs it instead of the source
	FlagPth        = "pth"           // *.pth: python runs its import lines at start-up
	FlagShared     = "shared-object" // *.so, *.so.N, *.dylib: loaded into a process
	FlagExec       = "executable"    // a regular file with an exec bit
	FlagSetID      = "setuid"        // setuid or setgid bit
	FlagHook       = "hook"          // an entry of a hooks/ folder
	FlagBuild      = "build-file"    // package.json, Makefile below the top
	FlagEnvrc      = "envrc"         // .envrc below the top: direnv runs it
	FlagNodeBin    = "node-bin"      // node_modules/.bin: npm scripts run it
	FlagSymlink    = "symlink"       // points anywhere; the report says where
	FlagUnreadable = "unreadable"    // a folder made in the session the walk cannot list
)

// flags are the kinds p (of st_mode mode) is; grant is the grant walked
// and root the project.
func flags(p string, mode uint32, root, grant string) []string {
	var out []string
	name := filepath.Base(p)
	parent := filepath.Base(filepath.Dir(p))
	typ := mode & sIFMT
	top := filepath.Dir(p) == filepath.Clean(root) || filepath.Dir(p) == filepath.Clean(grant) && grant != root && !within(grant, root)
	slash := filepath.ToSlash(p)
	switch {
	case strings.HasSuffix(name, ".pyc") || strings.HasSuffix(name, ".pyo") || name == "__pycache__" || parent == "__pycache__":
		out = append(out, FlagBytecode)
	case strings.HasSuffix(name, ".pth"):
		out = append(out, FlagPth)
	case strings.HasSuffix(name, ".so") || strings.Contains(name, ".so.") || strings.HasSuffix(name, ".dylib"):
		out = append(out, FlagShared)
	}
	if typ == sIFREG && mode&0o111 != 0 {
		out = append(out, FlagExec)
	}
	if mode&0o6000 != 0 {
		out = append(out, FlagSetID)
	}
	if parent == "hooks" {
		out = append(out, FlagHook)
	}
	if !top {
		switch name {
		case "package.json", "Makefile", "makefile", "GNUmakefile":
			out = append(out, FlagBuild)
		case ".envrc":
			out = append(out, FlagEnvrc)
		}
	}
	if strings.Contains(slash, "/node_modules/.bin/") {
		out = append(out, FlagNodeBin)
	}
	if typ == sIFLNK {
		out = append(out, FlagSymlink)
	}
	return out
}
