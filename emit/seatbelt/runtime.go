package seatbelt

import "github.com/mcpolicy/mcpolicy/internal/artefact"

// Runtime: the wrapper runs sandbox-exec with the profile.
func (backend) Runtime() artefact.Runtime {
	return artefact.Runtime{Sandbox: artefact.Seatbelt, Program: SandboxExec}
}
