package cli

import (
	"fmt"
	"os"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/project"
)

// compilePin compiles the project at path as pin needs it: the server's
// pin is not read (pin is how a missing or stale one is made), and
// pinned says whether its policy reads one (tools: pin: true).
func compilePin(path, server string) (proj *project.Project, plan *compiler.Plan, plans []*compiler.Plan, pinned bool, err error) {
	proj, err = project.Discover(path)
	if err != nil {
		return nil, nil, nil, false, err
	}
	pols, err := proj.Load()
	if err != nil {
		return nil, nil, nil, false, err
	}
	for _, pol := range pols {
		for i := range pol.Servers {
			s := &pol.Servers[i]
			if s.Name != server || s.Tools == nil {
				continue
			}
			t := *s.Tools
			pinned = t.Pin
			t.Pin, t.OnPinChangePos = false, t.Pos // nor onPinChange, which needs pin
			s.Tools = &t
		}
	}
	home, _ := os.UserHomeDir()
	plans, err = compiler.Compile(pols, compiler.Options{Root: proj.Root, Home: home})
	if err != nil {
		return nil, nil, nil, false, err
	}
	for _, p := range plans {
		if p.Server == server {
			return proj, p, plans, pinned, nil
		}
	}
	return nil, nil, nil, false, &exitError{code: ExitError, err: fmt.Errorf("no server %q in %s (servers: %s)", server, path, names(plans))}
}
