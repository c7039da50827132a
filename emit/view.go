package emit

import (
	"strconv"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// View is what a backend makes of a plan's grants as the server meets
// them: the questions `mcpolicy why` asks to say whether a path, a
// variable or a destination is reachable, and what stops it. Each emitter
// answers beside the code that emits, so that why keeps no table of
// backends and a new backend says it in its own package.
type View interface {
	// PathModel is how the server names a path and how what holds the
	// path combines.
	PathModel() PathModel
	// Baseline is what the server sees of the host besides its grants:
	// the runtime baseline and the devices, at the paths it names them by.
	Baseline(p *compiler.Plan) []Seen
	// Root is what the server meets at a path nothing it is shown holds.
	Root(p *compiler.Plan) Root
	// ScratchMount is how the plan's scratch is mounted.
	ScratchMount() ScratchMount
	// ServerEnv is what the server's environment holds besides its env
	// grants, and how the host's is kept out.
	ServerEnv(p *compiler.Plan) ServerEnv
	// Egress is how the server's connections leave, or fail to.
	Egress(p *compiler.Plan) Egress
	// Proc is what the server finds at /proc.
	Proc(p *compiler.Plan) ProcFS
}

// ProcFS is what a backend puts at /proc for a plan: the server's own
// procfs, or nothing. Never the host's: /proc/self is the server.
type ProcFS struct {
	// Own: a procfs of the server's own PID namespace is mounted there;
	// false: there is no /proc, and How says why.
	Own bool
	// PerProcess: only the per-process folders and self (subset=pid):
	// no host-wide file (/proc/cpuinfo, /proc/sys, /proc/keys).
	PerProcess bool
	// Ptraceable: only the processes the server may ptrace are listed
	// (hidepid=ptraceable): its own and its children.
	Ptraceable bool
	// Masked are paths below /proc that show the server nothing.
	Masked []string
	// HiddenInit, when set, says why PID 1 (the namespace's init, not
	// the server) is never in the server's /proc.
	HiddenInit string
	// How says what it is, or why there is none.
	How string
	// OnRequest: mounted only for a plan whose proc says so; otherwise
	// every server gets it (or none does).
	OnRequest bool
}

// PathModel is how a backend shows paths to the server.
type PathModel int

const (
	// MountsAtTargets: each mount at its target, the deepest holding a
	// path decides (a read-only mount inside a read-write one stays
	// read-only); a protected name present when the plan was compiled is
	// a read-only bind on top, and a read-write mount of the project root
	// has its top level fixed at launch.
	MountsAtTargets PathModel = iota
	// HostPathsRightsAdd: the server names host paths, and the rights of
	// every rule holding one add up; but the launcher's minimal root binds
	// a read-write project root's fixed top level and the protected paths
	// read-only, as MountsAtTargets does, and those mounts refuse writes.
	HostPathsRightsAdd
	// HostPathsDeepestRule: the server names host paths, and the deepest
	// rule holding one decides; protected names are denied by name at the
	// top of every read-write mount, present or not.
	HostPathsDeepestRule
)

// Seen is one host path the server sees besides its grants.
type Seen struct {
	At     string // the path the server names it by
	Source string // the host path it shows
	Device bool   // a device every sandbox gets, not the runtime baseline
	Write  bool   // writable (a device such as /dev/null); else read-only
}

// Root is what the server meets where no grant, baseline path or device is.
type Root struct {
	// Image: the root is an image's own files, so the host's runtime
	// baseline does not apply (the image's own /usr stands there).
	Image bool
	// Absent says why a path nothing holds is not there for the server.
	Absent string
	// OnTheWay, for a backend whose server names host paths, says why a
	// folder on the way to a grant, which nothing grants itself, is
	// refused; "" when Absent answers for it too. (Where mounts sit at
	// their targets such a folder is one of the sandbox's read-only root.)
	OnTheWay string
	// Besides names what but a mount could hold a host path, as "no mount
	// holds it, nor ..." continues; "" for nothing named there.
	Besides string
}

// ScratchMount is how a backend mounts the plan's scratch.
type ScratchMount struct {
	// AtTarget: a tmpfs at the scratch's target; false when the scratch
	// is a private folder elsewhere, which no path of the plan names.
	AtTarget bool
	NoExec   bool // mounted noexec: nothing on it runs
}

// ServerEnv is the server's environment besides its env grants.
type ServerEnv struct {
	// Set are the variables the backend sets itself whatever the host
	// holds, each with where its value comes from.
	Set map[string]string
	// Cleared says how the rest of the host's environment is kept out.
	Cleared string
}

// Egress is how a backend's server reaches the network.
type Egress struct {
	// Direct says what becomes of a connection that does not go through
	// the egress proxy (raw TCP, UDP, DNS).
	Direct string
	// Proxy says where the server reaches the egress proxy (an allowlist).
	Proxy string
}

// ProxyVariables are the variables a backend that puts the egress proxy in
// front of the server sets for an allowlist (sandbox.ProxyEnv), each with
// where its value comes from; none for network none.
func ProxyVariables(p *compiler.Plan) map[string]string {
	set := map[string]string{}
	if p.Network.Mode != "allowlist" {
		return set
	}
	for _, kv := range sandbox.ProxyEnv(p.Network.ProxyPort) {
		set[kv[0]] = "set by mcpolicy, not from the host: it points at the egress proxy on 127.0.0.1:" + strconv.Itoa(p.Network.ProxyPort)
	}
	return TrustVariables(p, set)
}

// TrustVariables adds to set the variables that point TLS clients at the
// session CA (sandbox.TrustEnv), which every backend that injects
// credentials sets for a plan with one, whatever the host holds.
func TrustVariables(p *compiler.Plan, set map[string]string) map[string]string {
	if len(p.Credentials) == 0 {
		return set
	}
	for _, kv := range sandbox.TrustEnv() {
		what := "the session CA, under which the egress proxy intercepts TLS to the credentials' destinations, and the usual roots"
		if kv[1] == sandbox.SessionCA {
			what = "the session CA alone, which Node.js adds to its own roots"
		}
		set[kv[0]] = "set by mcpolicy, not from the host: it points at " + kv[1] + ", " + what
	}
	return set
}

// CredentialValues is a View whose credentials' values are kept
// elsewhere than where mcpolicy run reads them at spawn: where, for
// mcpolicy why, in place of compiler.SourceSummary.
type CredentialValues interface {
	CredentialValue(p *compiler.Plan, g credential.Grant) string
}

// PolicyVariables adds to set the variables the policy sets to constant
// values (setenv), each with its value: every backend sets them itself,
// whatever the host, the client or the env file holds.
func PolicyVariables(p *compiler.Plan, set map[string]string) map[string]string {
	for _, e := range p.EnvValues() {
		set[e.Name] = "set by the policy (setenv) to " + strconv.Quote(e.Value) + ", not from the host"
	}
	return set
}

// ImageRoot is a container's root: the image's own, made read-only by
// what the backend writes (docker's --read-only, a Pod's
// readOnlyRootFilesystem).
func ImageRoot(readOnlyBy string) Root {
	return Root{
		Image:  true,
		Absent: "not a host path here: the container's root is the image's own, read-only (" + readOnlyBy + "); nothing of the host but the mounts",
	}
}

// LoopbackOnly is the egress of a sandbox with its own network namespace:
// only loopback, where mcpolicy run's forwarder to the proxy listens.
func LoopbackOnly(p *compiler.Plan) Egress {
	return Egress{
		Direct: "a direct connection (raw TCP, UDP, DNS) finds no route: the sandbox has its own network namespace with only loopback",
		Proxy:  "127.0.0.1:" + strconv.Itoa(p.Network.ProxyPort) + " in the sandbox, where mcpolicy run's forwarder listens",
	}
}
