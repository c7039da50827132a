package compiler

import (
	"bytes"
	"strings"
	"testing"
)

// TestDecodePlanRoundTrip: a compiled plan read back from its JSON writes
// the same bytes and keeps its hash; an edit of a grant, an unknown field
// or a changed hash is refused.
func TestDecodePlanRoundTrip(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: s: {
	image: "x", command: ["serve", "--fast"], env: ["B", "A"], user: "invoker"
	mounts: [{source: ".", target: "/w", mode: "rw"}, {source: "a", target: "/a"}]
	network: allow: ["api.github.com:443", "*.example.com:443"]
	limits: {memory: "256m", pids: 64}
	backends: ["bwrap", "docker"]
}`, "a/", ".env")
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	got, err := DecodePlan(p.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.JSON(), p.JSON()) || got.Hash != p.Hash {
		t.Errorf("round trip changed the plan:\n%s\nwant\n%s", got.JSON(), p.JSON())
	}
	if strings.Join(got.Network.Entries(), ",") != strings.Join(p.Network.Entries(), ",") || len(got.Network.Rules()) != 2 || !got.Mounts[1].FixedTop() {
		t.Errorf("read back: %+v", got)
	}
	for name, edit := range map[string]func(string) string{
		"a grant widened":  func(s string) string { return strings.Replace(s, `"mode": "ro"`, `"mode": "rw"`, 1) },
		"a field unknown":  func(s string) string { return strings.Replace(s, `"server":`, `"extra": 1, "server":`, 1) },
		"the hash changed": func(s string) string { return strings.Replace(s, p.Hash, "sha256:"+strings.Repeat("0", 64), 1) },
		"more after it":    func(s string) string { return s + "{}" },
		"not JSON":         func(s string) string { return s[:len(s)/2] },
		"no server at all": func(string) string { return "{}" },
	} {
		if _, err := DecodePlan([]byte(edit(string(p.JSON())))); err == nil {
			t.Errorf("%s: read back", name)
		}
	}
}
