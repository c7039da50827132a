package diff

import (
	"encoding/json"
	"fmt"
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
	ps, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: root, Home: root, NoFS: true}) // sources need not exist: diff compares policies
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
		{`image: "x"`, `image: "x", user: "invoker"`, "widened:USER_INVOKER"},
		{`image: "x", user: "invoker"`, `image: "x"`, "narrowed:USER_NOT_INVOKER"},
		{`image: "x", network: allow: ["a.com:443"]`, `image: "x", network: allow: ["a.com:443", "b.com:443"]`, "widened:EGRESS_ADDED"},
		{`image: "x", network: allow: ["a.com:443"]`, `image: "x"`, "narrowed:BASELINE_NARROWED narrowed:NETWORK_CLOSED"}, // the CA certificates go with the egress
		{`image: "x", network: allow: ["api.x.com:443"]`, `image: "x", network: allow: ["*.x.com:443"]`, "widened:EGRESS_WIDENED"},
		{`image: "x", network: allow: ["*.x.com:443"]`, `image: "x", network: allow: ["api.x.com:443"]`, "narrowed:EGRESS_NARROWED"},
		{`image: "x", network: allow: ["a.x.com:443", "b.x.com:443"]`, `image: "x", network: allow: ["*.x.com:443"]`, "widened:EGRESS_WIDENED"},
		{`image: "x", network: allow: ["*.a.x.com:443"]`, `image: "x", network: allow: ["*.x.com:443"]`, "widened:EGRESS_WIDENED"},
		{`image: "x", network: allow: ["*.x.com:443", "b.a.x.com:443"]`, `image: "x", network: allow: ["*.a.x.com:443"]`, "narrowed:EGRESS_NARROWED narrowed:EGRESS_REMOVED"},
		// a wildcard never matches its apex, another port, or an address
		{`image: "x", network: allow: ["x.com:443"]`, `image: "x", network: allow: ["*.x.com:443"]`, "narrowed:EGRESS_REMOVED widened:EGRESS_ADDED"},
		{`image: "x", network: allow: ["api.x.com:443"]`, `image: "x", network: allow: ["*.x.com:8443"]`, "narrowed:EGRESS_REMOVED widened:EGRESS_ADDED"},
		{`image: "x", network: allow: ["10.0.0.5:443"]`, `image: "x", network: allow: ["*.x.com:443"]`, "narrowed:EGRESS_REMOVED widened:EGRESS_ADDED"},
		{`image: "x"`, `image: "x", unprotect: [".vscode"]`, "widened:UNPROTECT_ADDED"},
		{`command: ["a"], runtime: "static"`, `command: ["a"]`, "widened:BASELINE_WIDENED"},
		{`image: "x", mounts: [{source: "a", target: "/a"}]`, `image: "x", mounts: [{source: "a", target: "/b"}]`, ""},
		{`image: "x", mounts: [{source: "a", target: "/a"}]`, `image: "x", mounts: [{source: "a/b", target: "/a"}]`, "narrowed:MOUNT_MOVED_DOWN"},
		{`image: "x", mounts: [{source: "a", target: "/a", mode: "rw"}]`, `image: "x", mounts: [{source: "a", target: "/a"}]`, "narrowed:MOUNT_RO"},
		{`image: "x", mounts: [{source: "a", target: "/a"}]`, `image: "x", mounts: [{source: "b", target: "/a"}]`, "widened:MOUNT_SOURCE"},
		{`image: "x", env: ["A"]`, `image: "x", env: ["B"]`, "narrowed:ENV_REMOVED widened:ENV_ADDED"},
		{`command: ["a"], packs: ["go"]`, `command: ["a"], packs: ["npx", "go"]`, "widened:PACK_ADDED"},
		{`command: ["a"], packs: ["go", "npx"]`, `command: ["a"], packs: ["deno"]`, "narrowed:PACK_REMOVED narrowed:PACK_REMOVED widened:PACK_ADDED"},
		{`command: ["a"], packs: ["go", "npx"]`, `command: ["a"], packs: ["npx", "go"]`, ""},
	}
	for _, c := range cases {
		got := kinds(Plans(plans(t, c.old), plans(t, c.new)))
		if got != c.want {
			t.Errorf("%s  ->  %s\ngot  %q\nwant %q", c.old, c.new, got, c.want)
		}
	}
	// Every kind a change can have is known (waivers are checked against it).
	for _, c := range Plans(plans(t, `image: "x", network: allow: ["a.x.com:443", "*.y.com:443", "b.com:443"]`),
		plans(t, `image: "x", user: "0:0", env: ["A"], network: allow: ["*.x.com:443", "c.y.com:443", "d.com:443"]`)) {
		if !IsKind(c.Kind) {
			t.Errorf("kind %q is not in Kinds", c.Kind)
		}
	}
}

// TestEgressEntries: egress changes point at the entries, in both
// versions (lines: 4 is the network field, entries from 5), and say when a
// wildcard still (or already) covers an entry.
func TestEgressEntries(t *testing.T) {
	old := plans(t, `image: "x"
network: allow: [
	"uploads.x.com:443",
	"api.x.com:443",
	"*.y.com:443",
	"a.z.com:443",
]`)
	new := plans(t, `image: "x"
network: allow: [
	"*.y.com:443",
	"b.y.com:443",
	"*.x.com:443",
]`)
	var got []string
	for _, c := range Plans(old, new) {
		got = append(got, fmt.Sprintf("%s %d<-%d %s", c.Kind, c.Pos.Line, c.Against.Line, c.What))
	}
	want := []string{
		"EGRESS_REMOVED 4<-8 egress to a.z.com:443 removed",
		"EGRESS_ADDED 6<-4 egress to b.y.com:443 allowed (already allowed by *.y.com:443)",
		"EGRESS_WIDENED 7<-6 egress api.x.com:443, uploads.x.com:443 -> *.x.com:443 (every name under x.com)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// the reverse narrows, and an entry dropped under a kept wildcard
	// says it is still reachable
	got = nil
	for _, c := range Plans(new, old) {
		got = append(got, fmt.Sprintf("%s %d<-%d %s", c.Kind, c.Pos.Line, c.Against.Line, c.What))
	}
	want = []string{
		"EGRESS_REMOVED 4<-6 egress to b.y.com:443 removed (still allowed by *.y.com:443)",
		"EGRESS_NARROWED 6<-7 egress *.x.com:443 -> api.x.com:443, uploads.x.com:443",
		"EGRESS_ADDED 8<-4 egress to a.z.com:443 allowed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("reverse: got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEgressFromJSON: plans read back from JSON carry no positions; the
// changes are the same, placed at the network field.
func TestEgressFromJSON(t *testing.T) {
	decode := func(ps []*compiler.Plan) []*compiler.Plan {
		var p compiler.Plan
		if err := json.Unmarshal(ps[0].JSON(), &p); err != nil {
			t.Fatal(err)
		}
		return []*compiler.Plan{&p}
	}
	old := decode(plans(t, `image: "x", network: allow: ["api.x.com:443", "b.com:443"]`))
	new := decode(plans(t, `image: "x", network: allow: ["*.x.com:443", "c.com:443"]`))
	if got := kinds(Plans(old, new)); got != "narrowed:EGRESS_REMOVED widened:EGRESS_ADDED widened:EGRESS_WIDENED" {
		t.Errorf("got %q", got)
	}
}
