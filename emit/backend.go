package emit

import (
	"fmt"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// Backend is one sandbox mcpolicy emits plans for. Each emitter package
// exposes its value(s); package emit/registry lists them. Adding a backend
// is a package under emit/ and a line there: build, client entries, run,
// prove, doctor and the CLI find it through the registry.
type Backend interface {
	View // what the backend makes of a plan's grants, for mcpolicy why
	// Name is how policies, flags, artefact folders and reports call it.
	Name() string
	// Builds names the backend whose artefacts this one runs: its own
	// name, or docker's for podman (which no policy lists).
	Builds() string
	Runtime() artefact.Runtime // the sandbox its artefacts run in, for run, prove and doctor
	// Enforcement answers, for each restriction the plan asks for, how
	// far this backend enforces it on this machine.
	Enforcement(p *compiler.Plan) []Row
	// Check emits the plan with placeholders: nil, or why the backend
	// cannot enforce it (a *NotEnforceableError), so that nothing is
	// written for a plan the backend refuses.
	Check(p *compiler.Plan) error
	// Artefacts renders what build writes for the plan, main file first,
	// named relative to the output folder, with machine-neutral paths.
	// out is that folder relative to the project root.
	Artefacts(p *compiler.Plan, out string) ([]File, error)
	// Entry is how a client entry starts the plan without mcpolicy run
	// (which starts a plan with an egress allowlist, beside its proxy).
	Entry(p *compiler.Plan, e EntryEnv) (*Command, error)
	// EnvFile: what starts the sandbox can read env grant values from an
	// --env-file, for a client that passes none.
	EnvFile() bool
	// HostEnv names the variables of this machine an entry must carry for
	// the sandbox to be found (an engine's address); clients pass none.
	HostEnv() []string
}

// Across is a Backend whose artefacts of one policy's servers land in one
// place (a cluster's namespace): it refuses the plans it builds whose
// artefacts would collide there.
type Across interface {
	CheckAcross(plans []*compiler.Plan) error
}

// File is one artefact: a slash path relative to build's output folder.
type File struct {
	Name string
	Data []byte
}

// EntryEnv is what a backend needs from the client writer to say how an
// entry starts a plan. The functions are called only by the backends that
// need them, so a missing launcher fails only the entries that use it.
type EntryEnv struct {
	Paths compiler.Resolver // host paths as the entry shows them
	Root  string            // the project root as the entry shows it
	// RootFlag is how the entry gives the launcher the project root (nil:
	// --project-root Root): a portable entry may name the variable the
	// client sets instead (--project-root-env CLAUDE_PROJECT_DIR).
	RootFlag []string
	// Portable: the entry goes into a file a team commits, and names no
	// path of this machine (programs by name, the project and home by the
	// client's variables).
	Portable bool
	Out      string // build's output folder, absolute
	// Show names a file of the project as the entry shows it.
	Show func(file string) string
	// Launcher is mcpolicy-launch as the entry runs it: its absolute
	// path, or its name in a portable entry (found on PATH at spawn).
	Launcher func() (string, error)
	// Pin checks that file holds want, as build wrote it, and returns the
	// digest the entry pins (the launcher refuses any other bytes).
	Pin func(file string, want []byte) (string, error)
	// Program is the digest ("sha256:HEX") of a file the server runs, on
	// this machine, read as the launcher will (launch.ProgramDigest).
	Program func(compiler.HostPath) (string, error)
	// Abs is a program's absolute path on this machine: an entry must not
	// run whatever PATH finds first at spawn. A portable entry keeps the
	// name, and the launcher checks what PATH finds (launch.ProgramsOutsideGrants).
	Abs func(program string) string
}

// RootArgs are the launcher's flags that give it the project root.
func (e EntryEnv) RootArgs() []string {
	if e.RootFlag != nil {
		return e.RootFlag
	}
	return []string{"--project-root", e.Root}
}

// Command is how an entry starts a server: an absolute program, its
// arguments and the environment it needs from the client.
type Command struct {
	Path string
	Args []string
	Env  map[string]string
}

// BuiltFor reports whether build writes the artefacts b runs for the plan
// (podman runs the docker artefact: a plan listing docker or podman).
func BuiltFor(p *compiler.Plan, b Backend) bool {
	for _, name := range p.Backends {
		if name == b.Builds() || name == b.Name() {
			return true
		}
	}
	return false
}

// ProgramPins are the plan's pinned programs as the artefact names them
// (placeholders); nil when none.
func ProgramPins(p *compiler.Plan) []string {
	if len(p.ProgramPins) == 0 {
		return nil
	}
	out := make([]string, len(p.ProgramPins))
	for i, h := range p.ProgramPins {
		out[i] = h.Placeholder()
	}
	return out
}

// ProgramArgs are the launcher flags that pin each of the plan's pinned
// programs (artefact.ProgramFlag): the file as the entry shows it, and its
// digest on this machine now. A server whose program a read-write grant
// holds could have rewritten it: the entry is written after the user
// checked it, and the launcher refuses other bytes.
func ProgramArgs(p *compiler.Plan, e EntryEnv) ([]string, error) {
	var args []string
	for _, h := range p.ProgramPins {
		if e.Program == nil {
			return nil, fmt.Errorf("server %q: its program %s lies under a read-write grant, and this entry cannot pin its digest", p.Server, h)
		}
		d, err := e.Program(h)
		if err != nil {
			return nil, fmt.Errorf("server %q: pinning its program %s (a read-write grant of the policy holds it): %w", p.Server, h, err)
		}
		args = append(args, "--"+artefact.ProgramFlag, artefact.ProgramPin(e.Paths.Resolve(h), d))
	}
	return args, nil
}
