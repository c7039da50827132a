package landlock

import "github.com/mcpolicy/mcpolicy/internal/artefact"

// Runtime: the launcher applies the ruleset to itself; no program starts
// a sandbox around it.
func (backend) Runtime() artefact.Runtime {
	return artefact.Runtime{Sandbox: artefact.Landlock}
}
