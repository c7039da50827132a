package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/project"
)

// noteUnwritable says on w (stderr: never into an artefact, whose bytes
// must not depend on the machine) each read-write grant the server's user
// cannot write here, with the way out. It matters only to root: started
// by root, a server runs as its plan's user (a launcher run as root,
// rootful docker), and such a grant answers EACCES with nothing said.
func noteUnwritable(w io.Writer, plans []*compiler.Plan, root string) []project.UnwritableGrant {
	if os.Geteuid() != 0 || w == nil {
		return nil
	}
	home, _ := os.UserHomeDir()
	us := project.UnwritableGrants(runsAsPlanUser(plans), compiler.Machine{ProjectRoot: root, Home: home})
	for _, u := range us {
		fmt.Fprintf(w, "mcpolicy: note: %s\n", spellText(u.String()))
	}
	return us
}

// runsAsPlanUser are the plans with a backend that, started by root here,
// runs the server as the plan's user: bwrap, Landlock and the engines.
// Seatbelt runs it as the one who starts it (on macOS), a cluster
// elsewhere.
func runsAsPlanUser(plans []*compiler.Plan) []*compiler.Plan {
	var out []*compiler.Plan
	for _, p := range plans {
		for _, name := range p.Backends {
			b, err := registry.Lookup(name)
			if err != nil {
				continue
			}
			if k := b.Runtime().Sandbox; k == artefact.Bwrap || k == artefact.Landlock || k == artefact.Engine {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// terminalOnly is w when it is a terminal, else nil: build and explain
// say this machine's notes to a person at a terminal, and keep the output
// a script or a committed transcript reads the same on every machine
// (check and doctor --server say them always).
func terminalOnly(w io.Writer) io.Writer {
	if isTerminal(w) {
		return w
	}
	return nil
}
