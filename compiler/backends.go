package compiler

// Backend names the compiler needs before any emitter: the compiler
// imports none (emit/backends, which lists them, tests these agree).
const (
	// ImageBackend runs a server's image; it needs one.
	ImageBackend = "docker"
)

// DefaultHostBackends are a command-only server's backends by default.
var DefaultHostBackends = []string{"bwrap", "landlock"}
