package docker

import (
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// PodmanBackend runs the docker artefact under podman.
const PodmanBackend = backendtraits.Podman

// Docker and Podman are the container engines as backends: the same
// arguments, run by a different engine.
var (
	Docker emit.Backend = engine{Backend, []string{"DOCKER_HOST", "DOCKER_CONTEXT"}, dockerTraits}
	// Podman: rootless podman also needs its runtime folder.
	Podman emit.Backend = engine{PodmanBackend, []string{"CONTAINER_HOST", "XDG_RUNTIME_DIR"}, podmanTraits}
)

// engine is a container engine: its name is also its program.
type engine struct {
	name   string
	env    []string
	traits artefact.EngineTraits // runtime.go
}

func (e engine) Name() string                          { return e.name }
func (engine) EnvFile() bool                           { return true }
func (engine) Builds() string                          { return Backend }
func (engine) Enforcement(p *compiler.Plan) []emit.Row { return Enforcement(p) }
func (e engine) HostEnv() []string                     { return e.env }

func (engine) Check(p *compiler.Plan) error {
	_, err := Args(p, compiler.Placeholders{})
	return err
}

// Artefacts: the arguments, and for an allowlist the egress sidecar's
// whose network the server joins, for review.
func (engine) Artefacts(p *compiler.Plan, _ string) ([]emit.File, error) {
	base := Backend + "/" + p.Server
	args, err := Args(p, compiler.Placeholders{})
	if err != nil {
		return nil, err
	}
	files := []emit.File{{Name: base + ".json", Data: emit.JSONArgs(args)}}
	if p.Network.Mode == "allowlist" {
		side, err := SidecarArgs(p, compiler.Placeholders{}, EgressContainerPlaceholder)
		if err != nil {
			return nil, err
		}
		files = append(files, emit.File{Name: base + ".egress.json", Data: emit.JSONArgs(side)})
	}
	return files, nil
}

// Entry: mcpolicy-launch checks every bind source (no symlink below the
// project or home) and fixes the project's top level, then runs the engine
// with the arguments. The root is an argument, not the environment: an
// entry that lost its env must not lose the fixed top level with it. The
// arguments stay inline, for whoever reads the client file, and the
// artefact they come from is pinned by its digest: the launcher runs them
// only when they are still what that artefact expands to (a hand edit of
// the entry is refused), and both sides expand it with artefact.EngineArgs.
func (e engine) Entry(p *compiler.Plan, env emit.EntryEnv) (*emit.Command, error) {
	raw, err := Args(p, compiler.Placeholders{})
	if err != nil {
		return nil, err
	}
	art := emit.JSONArgs(raw)
	launcher, err := env.Launcher()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(env.Out, Backend, p.Server+".json")
	digest, err := env.Pin(file, art)
	if err != nil {
		return nil, err
	}
	home := env.Paths.Resolve(compiler.HostPath{Base: compiler.Home, Rel: "."})
	args, err := artefact.EngineArgs(art, env.Root, home)
	if err != nil {
		return nil, err
	}
	for _, a := range args {
		if err := emit.CheckSafe(p.Server, "argument", a); err != nil {
			return nil, err
		}
	}
	// The unprotected names and the programs to pin are labels in the
	// arguments (LabelUnprotect, LabelProgramPin): pinned with them.
	c := &emit.Command{Path: launcher, Env: map[string]string{},
		Args: append([]string{"--engine", env.Abs(e.name)}, env.RootArgs()...)}
	pins, err := emit.ProgramArgs(p, env)
	if err != nil {
		return nil, err
	}
	c.Args = append(c.Args, pins...)
	c.Args = append(append(c.Args, "--sha256", digest, env.Show(file), "--"), args...)
	return c, nil
}
