// Package backends is the registry of sandbox backends: every emitter's
// Backend value, in report order. Everything that picks a backend by name
// (build, client entries, run, prove, doctor, the CLI) looks it up here.
// The names, and what the compiler and client readers must know of each
// before an emitter runs, are package backendtraits' table; a test keeps the
// two equal.
package registry

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/kubernetes"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
)

var all = []emit.Backend{bwrap.Bwrap, landlock.Landlock, docker.Docker, docker.Podman, seatbelt.Seatbelt, kubernetes.Kubernetes}

// All returns every backend, in report order.
func All() []emit.Backend { return append([]emit.Backend{}, all...) }

// Names lists the backends' names, in report order.
func Names() []string {
	var out []string
	for _, b := range all {
		out = append(out, b.Name())
	}
	return out
}

// Lookup finds a backend by name.
func Lookup(name string) (emit.Backend, error) {
	for _, b := range all {
		if b.Name() == name {
			return b, nil
		}
	}
	return nil, fmt.Errorf("unknown backend %q (backends: %s)", name, strings.Join(Names(), ", "))
}
