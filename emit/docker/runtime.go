package docker

import "github.com/mcpolicy/mcpolicy/internal/artefact"

// Runtime: the engine's CLI, its name, runs the arguments.
func (e engine) Runtime() artefact.Runtime {
	return artefact.Runtime{Sandbox: artefact.Engine, Program: e.name, Engine: e.traits}
}

// dockerTraits: a daemon runs the containers.
var dockerTraits = artefact.EngineTraits{
	VersionFormat: "{{.ServerVersion}}",
	Install:       "install Docker Engine (https://docs.docker.com/engine/install/), or use podman",
}

// podmanTraits: no daemon; `--network container:X` pins X, and an
// imported image is localhost's.
var podmanTraits = artefact.EngineTraits{
	Daemonless:    true,
	JoinByPath:    true,
	ImportPrefix:  "localhost/",
	VersionFormat: "{{.Version.Version}}",
	Install:       "install podman (apt install podman, dnf install podman)",
}
