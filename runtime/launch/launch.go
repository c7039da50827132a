// Package launch starts a server under a Landlock ruleset (`mcpolicy
// exec`). Where unprivileged user namespaces work, the server also gets an
// empty network namespace (network "none" for every protocol, not just
// TCP), its own IPC namespace, and a private mount namespace whose root is
// a minimal tmpfs holding only the baseline, the grants at their host
// paths, the bounded scratch tmpfs and a few devices: the
// host's named unix sockets (/run/docker.sock, D-Bus, agents), which no
// Landlock right covers, are not there (see root_mount_linux.go), and a new
// PID namespace whose init, the confined launcher, forks the server and
// stays: when either ends, so does every process the server started. The
// launcher outside stays as a small parent that forwards signals and
// returns the server's exit status. Elsewhere it applies the ruleset to itself and execs
// the server in place (every unix socket refused by the seccomp filter,
// unless the policy accepts landlock-unix-sockets).
// Either way the server runs in a new session, without a controlling
// terminal, and with a new, empty session keyring; stdin and stdout reach it
// untouched: they are MCP's stdio transport.
//
// The launcher (Start, Stage2) and the mount checks (Sources, Engine,
// VerifyMounts, PrepareBwrap, EnvFile.Load) need Linux: Landlock, mount
// namespaces, openat2. Built for another system (macOS, where mcpolicy
// runs the seatbelt backend), they return an UnsupportedError saying so
// (the *_other.go files); what is plain data — rulesets, artefacts, digests,
// env-file parsing — is the same everywhere.
package launch

import (
	"io"

	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// Stage2Arg is argv[1] of the launcher re-executed inside the namespaces.
const Stage2Arg = "__mcpolicy-landlock-stage2"

// HandoverArg is argv[1] of the launcher `mcpolicy exec` execs to run its
// launch (Handover); argv[2] is the descriptor holding it.
const HandoverArg = "__mcpolicy-exec-handover"

// Options tune a launch.
type Options struct {
	Verbose io.Writer      // where to say what is enforced; nil for quiet
	Environ []string       // the launcher's environment; passthrough values come from it
	Host    *hostcaps.Host // what the machine offers; nil: hostcaps.Detect, and try namespaces
	Probe   []probe.Attempt
	// ProjectRoot and Home are the bases below which grants are opened
	// without following a symlink when the minimal root is built (as
	// checkSources does). Empty: $PROJECT_ROOT and $HOME from
	// Environ; / is always one.
	ProjectRoot, Home string
	// Contained is called when a run in namespaces has ended: its PID
	// namespace is gone, and with it everything the server started (the
	// session's end; without namespaces a daemon may outlive the server).
	Contained func()
	// Log is the launch's record (nil: none). In namespaces stage 1
	// waits: its stderr is teed into the record, and the end logged.
	Log *launchlog.Launch
	// Tools is the tool surface the ruleset pins (Ruleset.Tools), which
	// stage 1 relays the server's stdio through (runtime/toolrelay); a
	// ruleset that pins one is refused without it, and without
	// namespaces (the launcher would become the server: nothing would
	// stay to relay).
	Tools *toolpolicy.Policy
}
