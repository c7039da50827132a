package seccomp

import (
	_ "embed"
	"slices"
)

// The engines' profile: what mcpolicy-launch, mcpolicy run and prove give
// docker and podman (--security-opt seccomp=PROFILE), so that both run a
// server under the same filter. It is Docker's default profile
// (github.com/moby/profiles/seccomp, the version in go.mod), generated into
// engine.json by TestEngineProfile (MCPOLICY_UPDATE=1 rewrites it): data,
// so a change of it is a reviewed diff, and the same bytes on every
// machine. Podman's own default (containers-common) allows keyctl, so a
// rootful podman's server, whose uid is the host user's, read and rewrote
// that user's keyring (@u); an older Docker's allows io_uring; both
// allowed AF_VSOCK sockets, which no network namespace confines (red
// team). Docker's current profile denies all three.
//
//go:embed engine.json
var engineProfile []byte

// EngineProfile returns the engines' seccomp profile (OCI JSON).
func EngineProfile() []byte { return slices.Clone(engineProfile) }
