package compiler

// Backend names the compiler needs before any emitter: the compiler
// imports none (emit/backends, which lists them, tests these agree).
const (
	// ImageBackend runs a server's image; it needs one. It is an image
	// server's backend by default.
	ImageBackend = "docker"
	// NoNetnsBackend has no network namespace: network "none" leaves it
	// no loopback either (explain says so).
	NoNetnsBackend = "seatbelt"
)

// ImageBackends are every backend that runs a server's image (and needs
// one): the default, and those a policy lists by name (kubernetes).
var ImageBackends = []string{ImageBackend, "kubernetes"}

// DefaultHostBackends are a command-only server's backends by default.
var DefaultHostBackends = []string{"bwrap", "landlock"}
