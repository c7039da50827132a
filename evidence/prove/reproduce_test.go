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
			got := reproduce(backend, p, m, o, probe.Create, "/workspace/new", &imageTools{standIn: "mcpolicy-prove:x", image: "img:1", probe: "/usr/local/bin/mcpolicy"})
			if w, _, _ := strings.Cut(got, " "); w != first {
				t.Errorf("%s, %s project: %q, want it to start with %s", backend, c.mode, got, first)
			}
		}
	}
}

// TestReproduceEngineInServersImage: a docker or podman line runs the
// server's own image with the artefact's flags: the image's own tool as
// its entrypoint where it has it, else the static probe bound in
// read-only; never the stand-in image, never mcpolicy.
func TestReproduceEngineInServersImage(t *testing.T) {
	m := compiler.Machine{ProjectRoot: "/srv/proj", Home: "/home/u"}
	p := &compiler.Plan{Server: "s", Image: "img:1", Command: []string{"/srv"},
		User: compiler.User{UID: 1000, GID: 1000}, Network: compiler.Network{Mode: "none"}}
	o := Options{Policy: "/srv/proj/mcpolicy.cue"}
	for _, c := range []struct {
		has  map[string]bool
		op   probe.Op
		want string
	}{
		{map[string]bool{"cat": true}, probe.Read, " --entrypoint cat img:1 /home/u/.aws/credentials"},
		{map[string]bool{"sh": true}, probe.Create, ` --entrypoint sh img:1 -c ': > "$0" && rm -- "$0"' /data/x`},
		{nil, probe.Read, " --mount 'type=bind,source=/opt/mcpolicy,target=/mcpolicy-probe,readonly' --entrypoint /mcpolicy-probe img:1 probe read:/home/u/.aws/credentials"},
	} {
		target := "/home/u/.aws/credentials"
		if c.op == probe.Create {
			target = "/data/x"
		}
		it := &imageTools{standIn: "mcpolicy-prove:x", image: "img:1", has: c.has, probe: "/opt/mcpolicy"}
		got := reproduce("podman", p, m, o, c.op, target, it)
		if !strings.HasPrefix(got, "podman run --rm -i --network none --read-only --cap-drop ALL") || !strings.HasSuffix(got, c.want) || strings.Contains(got, "mcpolicy-prove:") {
			t.Errorf("%v %s: %q, want it to end %q", c.has, c.op, got, c.want)
		}
	}
	// The server's image is not here, the stand-in is kept: the line runs it.
	if got := reproduce("docker", p, m, o, probe.Read, "/x", &imageTools{standIn: "mcpolicy-prove:x", image: "img:1", kept: true}); !strings.HasSuffix(got, " mcpolicy-prove:x /mcpolicy-probe probe read:/x") || strings.Contains(got, "img:1") {
		t.Errorf("kept stand-in: %q", got)
	}
	// A probe whose path a --mount value cannot hold unquoted: no line.
	if got := reproduce("docker", p, m, o, probe.Read, "/x", &imageTools{image: "img:1", probe: "/opt/a,b"}); got != "" {
		t.Errorf("a probe path with a comma: %q", got)
	}
}
