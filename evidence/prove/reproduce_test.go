package prove

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// TestReproduceFixedTopThroughTheLauncher: for a plan that mounts the
// project root read-write, the command a reviewer pastes goes through
// mcpolicy run (the launcher fixes the top level); bare bwrap or docker
// arguments would bind the root whole, and a create the evidence shows
// denied would succeed, in the project. Without it, the bare tools.
func TestReproduceFixedTopThroughTheLauncher(t *testing.T) {
	root := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}
	m := compiler.Machine{ProjectRoot: "/srv/proj", Home: "/home/u"}
	o := Options{Policy: "/srv/proj/mcpolicy.cue"}
	for _, c := range []struct {
		mode compiler.Mode
		want map[string]string // backend -> the command's first word
	}{
		{compiler.ReadWrite, map[string]string{"bwrap": "mcpolicy", "docker": "mcpolicy", "podman": "mcpolicy"}},
		{compiler.ReadOnly, map[string]string{"bwrap": "bwrap", "docker": "docker", "podman": "podman"}},
	} {
		p := &compiler.Plan{Server: "s", Image: "img:1", Command: []string{"/srv"},
			User: compiler.User{UID: 1000, GID: 1000}, Network: compiler.Network{Mode: "none"},
			Mounts: []compiler.Mount{{Source: root, Target: "/workspace", Mode: c.mode}}}
		for backend, first := range c.want {
			got := reproduce(backend, p, m, o, probe.Create, "/workspace/new", "mcpolicy-prove:x")
			if w, _, _ := strings.Cut(got, " "); w != first {
				t.Errorf("%s, %s project: %q, want it to start with %s", backend, c.mode, got, first)
			}
		}
	}
}
