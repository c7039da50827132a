package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// A project's committed client file (.mcp.json, .vscode/mcp.json) holds
// no path of the machine it was written on: the launcher, the engine and
// bwrap are named, found on PATH at spawn; the project root is the
// client's variable (${workspaceFolder}) or, for Claude Code, taken from
// the variable it sets in the server's environment (--project-root-env
// CLAUDE_PROJECT_DIR), with the entry's project paths relative to it.

// RootFromEnv is the project root a client put in the environment
// variable name: an absolute path, or an error saying which client sets it.
func RootFromEnv(name string, getenv func(string) string) (string, error) {
	v := getenv(name)
	if v == "" || !filepath.IsAbs(v) {
		return "", fmt.Errorf("--project-root-env %s: the client set no absolute %s (got %q): the entry takes the project root from it (Claude Code sets CLAUDE_PROJECT_DIR for the servers of a project's .mcp.json, from version 2.1.141); refusing to start without the root. Update the client, or write a user-scope entry (`mcpolicy client TARGET --user --write`)", name, name, v)
	}
	return filepath.Clean(v), nil
}

// UnderRoot is an entry's path as the launcher opens it: a relative one
// (a portable entry's ./.mcpolicy/..., ./bin/server) is the project root's.
func UnderRoot(root, p string) string {
	if p == "" || filepath.IsAbs(p) || root == "" {
		return p
	}
	return filepath.Join(root, p)
}

// rootedPins makes each --program-sha256 PATH=DIGEST whose PATH is
// relative (a portable entry's) absolute under root.
func rootedPins(root string, pins []string) []string {
	out := make([]string, len(pins))
	for i, v := range pins {
		out[i] = v
		if j := strings.LastIndex(v, "="); j > 0 && !filepath.IsAbs(v[:j]) && root != "" {
			out[i] = filepath.Join(root, v[:j]) + v[j:]
		}
	}
	return out
}

// planGrants is what the launcher reads of a plan build wrote: its mounts.
type planGrants struct {
	Server string `json:"server"`
	Mounts []struct {
		Source struct {
			Base string `json:"base"`
			Path string `json:"path"`
		} `json:"source"`
		Mode string `json:"mode"`
	} `json:"mounts"`
}

// ProjectWritable lists the host folders a server of the project may
// write: every read-write mount of every plan in OUT/plan (OUT is the
// pinned artefact's output folder, OUT/BACKEND/SERVER.json), each named
// with its server. A plan that cannot be read is an error: the check it
// feeds must not pass for want of data.
func ProjectWritable(artefactFile, root, home string) (map[string]string, error) {
	dir := filepath.Join(filepath.Dir(filepath.Dir(artefactFile)), "plan")
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("%s: no plan to check the launcher against (run `mcpolicy build`): a launcher found on PATH must lie outside every read-write grant of the project's servers", dir)
	}
	out := map[string]string{}
	for _, f := range names {
		b, err := hostfile.ReadRegular(f, hostfile.MaxArtefact)
		if err != nil {
			return nil, err
		}
		var p planGrants
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%s: not a plan: %v", f, err)
		}
		for _, m := range p.Mounts {
			if m.Mode != "rw" {
				continue
			}
			var g string
			switch m.Source.Base {
			case "PROJECT_ROOT":
				g = filepath.Join(root, m.Source.Path)
			case "HOME":
				if home == "" {
					continue
				}
				g = filepath.Join(home, m.Source.Path)
			case "":
				g = filepath.Clean(m.Source.Path)
			default:
				continue
			}
			out[g] = p.Server
		}
	}
	return out, nil
}

// Program is one program a launch runs with the server's trust, or a
// folder PATH finds one in: what it is ("the launcher") and its path.
type Program struct{ What, Path string }

// ProgramsOutsideGrants refuses (TamperError) to run when a program the
// launch runs with the server's trust — this launcher, the engine, bwrap,
// each as found now, and the folders on PATH it finds them in — lies in a
// read-write grant of a server of the project: that server could have
// rewritten it (or put its own there), and a launcher found on PATH was
// checked by no `mcpolicy client`. A program that cannot be found ("") is
// left to fail where it is run.
func ProgramsOutsideGrants(programs []Program, writable map[string]string) error {
	grants := make([]string, 0, len(writable))
	for g := range writable {
		grants = append(grants, g)
	}
	sort.Strings(grants)
	for _, pr := range programs {
		p := pr.Path
		if p == "" {
			continue
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		if g, in := InsideAny(p, grants); in {
			return tampered("%s %s lies inside %s, which server %q may write: it could have rewritten, or put there, what starts every server of the project; refusing to start. Keep mcpolicy-launch, the engine and bwrap, and the folders PATH finds them in, outside every read-write grant (e.g. `CGO_ENABLED=0 go install ./cmd/...` with GOBIN outside the project and its grants)", pr.What, pr.Path, g, writable[g])
		}
	}
	return nil
}

// selfPath is this executable, as the kernel started it (os.Executable:
// /proc/self/exe), replaceable in tests.
var selfPath = os.Executable

// portableByName reports whether the client started this launcher by name
// (found on PATH, as a committed entry names it), not by a path.
func portableByName() bool {
	return len(os.Args) > 0 && !strings.ContainsRune(os.Args[0], '/')
}
