// Package backend is the one table of backend names and of what code
// outside the emitters must know about each before any emitter runs: the
// compiler (which imports no emitter) picks defaults and checks a server's
// kind with it, and client readers know the programs that start a sandbox.
// The emitters, through emit/registry, are the rest; a test there keeps
// the two in step.
package backendtraits

// The backends' names, as policies, flags, artefact folders and reports
// spell them.
const (
	Bwrap      = "bwrap"
	Landlock   = "landlock" // also the kernel LSM's name
	Docker     = "docker"
	Podman     = "podman" // runs docker's artefacts; no policy lists it
	Seatbelt   = "seatbelt"
	Kubernetes = "kubernetes"
)

// traits is what the table says of one backend.
type traits struct {
	name string
	// builds names the backend whose artefacts this one runs: its own
	// name, or docker's for podman.
	builds string
	// image: it runs the server's image (and needs one); otherwise it runs
	// the server's command on the host.
	image bool
	// dflt: built when a policy lists no backends, for a server of its kind.
	dflt bool
	// noNetns: it has no network namespace, so network "none" leaves it no
	// loopback either.
	noNetns bool
	// program starts it in a client entry written by hand; "" when none
	// does (mcpolicy-launch starts landlock; a cluster runs kubernetes).
	program string
	// hostPaths: the server names host paths, each grant at its source
	// (a mount's target is not used); otherwise each mount is at its
	// target. Lint resolves a symlink's text by it.
	hostPaths bool
	// injects: its egress proxy keeps a credential's value outside the
	// sandbox, the server holding a placeholder (issue 41); the
	// backend's credentials row says how.
	injects bool
	// cluster: a cluster runs it, not mcpolicy run: its egress proxy is a
	// Pod of its own at a Service, and NetworkPolicies, not a network
	// namespace, keep the server's Pod to it.
	cluster bool
}

// table is in the registry's report order.
var table = []traits{
	{name: Bwrap, builds: Bwrap, dflt: true, program: Bwrap, injects: true},
	{name: Landlock, builds: Landlock, dflt: true, hostPaths: true},
	{name: Docker, builds: Docker, image: true, dflt: true, program: Docker, injects: true},
	{name: Podman, builds: Docker, image: true, program: Podman, injects: true},
	{name: Seatbelt, builds: Seatbelt, noNetns: true, program: "sandbox-exec", hostPaths: true},
	{name: Kubernetes, builds: Kubernetes, image: true, injects: true, cluster: true},
}

func lookup(name string) (traits, bool) {
	for _, t := range table {
		if t.name == name {
			return t, true
		}
	}
	return traits{}, false
}

// Names lists every backend, in the registry's report order.
func Names() []string {
	var out []string
	for _, t := range table {
		out = append(out, t.name)
	}
	return out
}

// Builds names the backend whose artefacts name runs (podman: docker's);
// "" for a name the table does not know.
func Builds(name string) string {
	t, _ := lookup(name)
	return t.builds
}

// RunsImage reports whether name runs the server's image, and so needs
// one; the others run its command on the host.
func RunsImage(name string) bool {
	t, _ := lookup(name)
	return t.image
}

// NoNetns reports whether name has no network namespace: network "none"
// leaves it no loopback either, and the egress proxy sits on the host.
func NoNetns(name string) bool {
	t, _ := lookup(name)
	return t.noNetns
}

// InjectsCredentials reports whether name keeps a credential's value
// outside the sandbox: a plan with credentials builds for it.
func InjectsCredentials(name string) bool {
	t, _ := lookup(name)
	return t.injects
}

// InCluster reports whether a cluster runs name (not mcpolicy run): its
// egress proxy is a Pod of its own, and NetworkPolicies keep the
// server's Pod to it.
func InCluster(name string) bool {
	t, _ := lookup(name)
	return t.cluster
}

// HostPaths reports whether name shows the server each grant at its host
// path (a mount's target unused) rather than each mount at its target.
func HostPaths(name string) bool {
	t, _ := lookup(name)
	return t.hostPaths
}

// ImageDefaults are the backends a server with an image gets when its
// policy lists none.
func ImageDefaults() []string { return defaults(true) }

// HostDefaults are the backends a server with only a command gets when
// its policy lists none.
func HostDefaults() []string { return defaults(false) }

func defaults(image bool) []string {
	var out []string
	for _, t := range table {
		if t.dflt && t.image == image {
			out = append(out, t.name)
		}
	}
	return out
}

// Program is the program a hand-written client entry runs to start name
// ("sandbox-exec" for seatbelt), or "" when none does.
func Program(name string) string {
	t, _ := lookup(name)
	return t.program
}

// Programs are the programs that start a backend from a client entry, in
// the registry's report order: a client reader treats them as launchers.
func Programs() []string {
	var out []string
	for _, t := range table {
		if t.program != "" {
			out = append(out, t.program)
		}
	}
	return out
}
