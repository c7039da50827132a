package doctor

import "github.com/mcpolicy/mcpolicy/internal/backendtraits"

// The backend names the tests read Check's results by.
const (
	Bwrap    = backendtraits.Bwrap
	Landlock = backendtraits.Landlock
	Docker   = backendtraits.Docker
	Podman   = backendtraits.Podman
)
