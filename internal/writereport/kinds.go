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
	// A .git below the project's top, and everything in it: editors run
	// git in every repository they find, and git runs its config
	// (core.fsmonitor, hooks).
	FlagGitDir        = "git-dir"
	FlagConftest      = "conftest"      // conftest.py: every pytest run below it imports it
	FlagSiteCustomize = "sitecustomize" // sitecustomize.py, usercustomize.py: python runs it at start-up
	// Anything below site-packages (or dist-packages) or in a folder
	// holding pyvenv.cfg: the environment's python imports or runs it.
	FlagPythonEnv  = "python-env"
	FlagTypeChange = "typechange" // a path git tracks as another type (a symlink for a file)
	// FlagOtherServer: written where another server of the project mounts
	// (a config it reads, a script it is given): what it reads decides how
	// it runs next, with its own grants. Only a policy that accepts
	// rw-holds-other-server lets one server write there.
	FlagOtherServer = "other-server"
)

// flags are the kinds p (of st_mode mode) is; root is the project, venv
// says p lies in a folder holding pyvenv.cfg.
func flags(p string, mode uint32, root string, venv bool) []string {
	var out []string
	name := filepath.Base(p)
	parent := filepath.Base(filepath.Dir(p))
	typ := mode & sIFMT
	// Only the project's top is fixed by the launcher (its names
	// protected); the top of any other grant is the server's to write.
	top := filepath.Dir(p) == filepath.Clean(root)
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
	switch name {
	case "conftest.py":
		out = append(out, FlagConftest)
	case "sitecustomize.py", "usercustomize.py":
		out = append(out, FlagSiteCustomize)
	}
	gitDir, env := false, venv
	for q := p; q != filepath.Dir(q); q = filepath.Dir(q) {
		switch filepath.Base(q) {
		case ".git":
			// The project's own .git is below its fixed top level.
			gitDir = gitDir || filepath.Dir(q) != filepath.Clean(root)
		case "site-packages", "dist-packages":
			env = true
		}
	}
	if gitDir {
		out = append(out, FlagGitDir)
	}
	if env {
		out = append(out, FlagPythonEnv)
	}
	return out
}
