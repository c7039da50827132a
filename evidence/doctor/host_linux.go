package doctor

import "github.com/mcpolicy/mcpolicy/internal/artefact"

// host fits the checks to this system. On Linux every backend in byKind
// is checked as it is, and seatbelt (macOS's) is not: see host_other.go.
func (c *Checker) host(map[artefact.Sandbox]kindCheck) {}

// egressHost: on Linux the egress forwarder is bound into bwrap and
// container sandboxes, so Egress checks that it is a static executable.
func egressHost() (Result, bool) { return Result{}, false }
