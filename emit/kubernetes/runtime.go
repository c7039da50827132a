package kubernetes

import "github.com/mcpolicy/mcpolicy/internal/artefact"

// Runtime: a cluster runs the manifest, nothing on this machine.
func (backend) Runtime() artefact.Runtime {
	return artefact.Runtime{Sandbox: artefact.Cluster}
}
