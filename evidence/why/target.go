package why

import (
	"fmt"
	"net"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

var envRE = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ParseTarget reads TARGET: "host:port" (or "[v6]:port"), an environment
// variable's name, "~/..." (the home), a relative path (from m.Cwd), or an
// absolute path — a sandbox path when it lies at or below a mount target
// or the scratch of one of plans, or in /proc (the server's own), else a
// host path. kind, when not empty,
// forces HostPath or SandboxPath.
func ParseTarget(s string, plans []*compiler.Plan, m Machine, kind Kind) (Target, error) {
	t := Target{Raw: s}
	if s == "" {
		return t, fmt.Errorf("empty target")
	}
	if kind == "" {
		if h, p, err := net.SplitHostPort(s); err == nil && !strings.Contains(s, "/") {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return t, fmt.Errorf("%s: port must be 1-65535", s)
			}
			t.Kind, t.Host, t.Port = Destination, h, n
			return t, nil
		}
		if envRE.Regexp().MatchString(s) {
			t.Kind, t.Name = EnvName, s
			return t, nil
		}
	}
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		t.Kind, t.Path = HostPath, filepath.Join(m.Home, strings.TrimPrefix(s, "~"))
	case !strings.HasPrefix(s, "/"):
		cwd := m.Cwd
		if cwd == "" {
			cwd = m.ProjectRoot
		}
		t.Kind, t.Path = HostPath, filepath.Join(cwd, s)
	default:
		t.Path = path.Clean(s)
		t.Kind = HostPath
		// The project and the home are host places: a path below them is
		// a host path even where a mount target or the scratch (/tmp) has
		// the same prefix; --sandbox says otherwise.
		host := within(t.Path, m.ProjectRoot) || m.Home != "" && within(t.Path, m.Home)
		// /proc is the server's own wherever it has one (proc.go).
		if kind == SandboxPath || kind == "" && !host && (inSandbox(plans, t.Path) || inProc(t.Path)) {
			t.Kind = SandboxPath
		}
	}
	if kind != "" && kind != t.Kind {
		if kind == SandboxPath && !strings.HasPrefix(s, "/") {
			return t, fmt.Errorf("%s: a sandbox path is absolute", s)
		}
		t.Kind = kind
	}
	return t, nil
}

func inSandbox(plans []*compiler.Plan, p string) bool {
	for _, pl := range plans {
		for _, mt := range pl.Mounts {
			if within(p, mt.Target) {
				return true
			}
		}
		if pl.Scratch != nil && within(p, pl.Scratch.Target) {
			return true
		}
	}
	return false
}
