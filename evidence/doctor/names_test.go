package doctor

import "github.com/mcpolicy/mcpolicy/internal/backend"

// The backend names the tests read Check's results by.
const (
	Bwrap    = backend.Bwrap
	Landlock = backend.Landlock
	Docker   = backend.Docker
	Podman   = backend.Podman
)
