package bwrap

import "github.com/mcpolicy/mcpolicy/internal/artefact"

// Runtime: bubblewrap runs the spec.
func (backend) Runtime() artefact.Runtime {
	return artefact.Runtime{Sandbox: artefact.Bwrap, Program: Program}
}
