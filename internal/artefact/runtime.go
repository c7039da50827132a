package artefact

// Sandbox is the kind of sandbox a backend's artefacts run in: what starts
// them on this machine. `mcpolicy run`, prove, doctor and the client
// readers dispatch on it, as the launcher dispatches on an artefact's
// format, never on a backend's name.
type Sandbox int

const (
	// Cluster: nothing on this machine runs it; a cluster applies the
	// manifest.
	Cluster Sandbox = iota
	// Bwrap: a BwrapSpec, which bubblewrap runs.
	Bwrap
	// Landlock: a Ruleset, which the launcher applies to itself before it
	// execs the server (mcpolicy exec, mcpolicy-launch).
	Landlock
	// Engine: a container engine's `run` arguments (EngineArgs).
	Engine
	// Seatbelt: a macOS sandbox profile, and the wrapper that runs
	// sandbox-exec with it.
	Seatbelt
)

// Runtime is what a backend declares of its artefacts at run time: the
// sandbox they run in, the program that starts it, and for a container
// engine what sets it apart from the others. Each emitter says it
// (emit.Backend's Runtime); the run time reads it.
type Runtime struct {
	Sandbox Sandbox
	// Program starts the sandbox: bubblewrap, the engine's CLI,
	// sandbox-exec; "" when no program does (the launcher applies a
	// ruleset to itself; a cluster runs a manifest).
	Program string
	// Engine is zero for a sandbox that is not a container engine.
	Engine EngineTraits
}

// EngineTraits are what the run time must know of one container engine
// beyond its program: where engines differ, it asks these, not a name.
type EngineTraits struct {
	// Daemonless: the engine runs containers as the user who calls it,
	// with no daemon in between: rootless unless root calls it, and what
	// fails is its own setup (user namespaces, its service), not a
	// daemon's socket.
	Daemonless bool
	// JoinByPath: a container joins the egress sidecar's network
	// namespace by its path (ns:/proc/PID/ns/net). Joined as
	// `--network container:X`, X becomes a dependency the engine will not
	// remove while the server's container exists.
	JoinByPath bool
	// ImportPrefix is what the engine puts before the tag of an image
	// imported from a tarball ("localhost/"), so the tag names it as the
	// engine lists it.
	ImportPrefix string
	// VersionFormat is the `info --format` template that prints the
	// engine's version.
	VersionFormat string
	// Install says how to install the engine.
	Install string
}
