package diff

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/schema"
)

func plans(t *testing.T, body string) []*compiler.Plan {
	t.Helper()
	root := t.TempDir()
	file := filepath.Join(root, "mcpolicy.cue")
	os.WriteFile(file, []byte("version: \"v1\"\nservers: s: {\n"+body+"\n}\n"), 0o644)
	pol, err := schema.Load(file, root)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: root, Home: root})
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func kinds(cs []Change) string {
	var ks []string
	for _, c := range cs {
		ks = append(ks, string(c.Verdict)+":"+c.Kind)
	}
	sort.Strings(ks)
	return strings.Join(ks, " ")
}

func TestVerdicts(t *testing.T) {
	cases := []struct{ old, new, want string }{
		{`image: "x"`, `image: "y"`, ""}, // the image is code, not confinement
		{`image: "x", scratch: size: "1m"`, `image: "x", scratch: size: "2m"`, "widened:SCRATCH_GREW"},
		{`image: "x", scratch: size: "2m"`, `image: "x"`, "narrowed:SCRATCH_REMOVED"},
		{`image: "x", limits: memory: "1g"`, `image: "x"`, "widened:LIMIT_RAISED"},
		{`image: "x", limits: pids: 10`, `image: "x", limits: pids: 5`, "narrowed:LIMIT_LOWERED"},
		{`image: "x"`, `image: "x", user: "0:0"`, "widened:USER_ROOT"},
		{`image: "x", network: allow: ["a.com:443"]`, `image: "x", network: allow: ["a.com:443", "b.com:443"]`, "widened:EGRESS_ADDED"},
		{`image: "x", network: allow: ["a.com:443"]`, `image: "x"`, "narrowed:NETWORK_CLOSED"},
		{`image: "x"`, `image: "x", unprotect: [".vscode"]`, "widened:UNPROTECT_ADDED"},
		{`command: ["a"], runtime: "static"`, `command: ["a"]`, "widened:BASELINE_WIDENED"},
		{`image: "x", mounts: [{source: "a", target: "/a"}]`, `image: "x", mounts: [{source: "a", target: "/b"}]`, ""},
		{`image: "x", mounts: [{source: "a", target: "/a"}]`, `image: "x", mounts: [{source: "a/b", target: "/a"}]`, "narrowed:MOUNT_MOVED_DOWN"},
		{`image: "x", mounts: [{source: "a", target: "/a", mode: "rw"}]`, `image: "x", mounts: [{source: "a", target: "/a"}]`, "narrowed:MOUNT_RO"},
		{`image: "x", mounts: [{source: "a", target: "/a"}]`, `image: "x", mounts: [{source: "b", target: "/a"}]`, "widened:MOUNT_SOURCE"},
		{`image: "x", env: ["A"]`, `image: "x", env: ["B"]`, "narrowed:ENV_REMOVED widened:ENV_ADDED"},
	}
	for _, c := range cases {
		got := kinds(Plans(plans(t, c.old), plans(t, c.new)))
		if got != c.want {
			t.Errorf("%s  ->  %s\ngot  %q\nwant %q", c.old, c.new, got, c.want)
		}
	}
	// Every kind a change can have is known (waivers are checked against it).
	for _, c := range Plans(plans(t, `image: "x"`), plans(t, `image: "x", user: "0:0", env: ["A"]`)) {
		if !IsKind(c.Kind) {
			t.Errorf("kind %q is not in Kinds", c.Kind)
		}
	}
}
