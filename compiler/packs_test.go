package compiler

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/baseline"
)

// TestPacksLowering: a pack is recorded whole in the plan, one grant;
// its home paths are ${HOME}/..., its values below the home too, and on a
// host backend the paths the runtime baseline holds are not bound twice.
func TestPacksLowering(t *testing.T) {
	plans, _, err := compileSrc(t, `version: "v1"
servers: s: {command: ["gopls", "mcp"], packs: ["npx", "go"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	p := plans[0]
	if got := p.PackNames(); !slices.Equal(got, []string{"go", "npx"}) {
		t.Fatalf("packs %v, want go, npx (sorted)", got)
	}
	gs := p.Grants()
	if len(gs) != 2 || gs[0].Kind != GrantPack || gs[1].Kind != GrantPack {
		t.Fatalf("grants %v, want one per pack", gs)
	}
	if got := GrantSummary(gs); got != "2 grants: 2 runtime packs" {
		t.Errorf("summary %q", got)
	}
	goPack := p.Packs[0]
	if !goPack.Proc || len(goPack.Caches) != 1 || goPack.Caches[0].SizeBytes != 1<<30 {
		t.Errorf("go pack %+v: want proc and one 1g cache", goPack)
	}
	if !slices.Contains(goPack.Paths, PackPath{Path: HostPath{Base: Home, Rel: "go/pkg/mod"}, Why: goPack.Paths[4].Why}) {
		t.Errorf("go pack paths %v lack ${HOME}/go/pkg/mod", goPack.Paths)
	}
	if i := slices.IndexFunc(goPack.Env, func(e PackEnv) bool { return e.Name == "GOMODCACHE" }); i < 0 || goPack.Env[i].Value != "${HOME}/go/pkg/mod" {
		t.Errorf("GOMODCACHE not ${HOME}/go/pkg/mod: %v", goPack.Env)
	}
	bl := p.BaselinePaths(Placeholders{})
	if slices.Contains(bl, "/usr/local/go") {
		t.Errorf("baseline paths %v bind /usr/local/go again, below /usr", bl)
	}
	for _, want := range []string{"/usr", "${HOME}/go/pkg/mod", "${HOME}/.npm/_npx"} {
		if !slices.Contains(bl, want) {
			t.Errorf("baseline paths %v lack %s", bl, want)
		}
	}
	static, _, err := compileSrc(t, `version: "v1"
servers: s: {command: ["/x"], runtime: "static", packs: ["go"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	if bl := static[0].BaselinePaths(Machine{Home: "/home/u"}); !slices.Equal(bl[:3], []string{"/usr/local/go", "/usr/lib/go", "/home/u/sdk"}) {
		t.Errorf("static baseline with go: %v", bl)
	}
	// The plan's JSON holds the pack, not its reasons.
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), `"packs":[{"name":"go"`) || strings.Contains(string(b), "GOROOT of") {
		t.Errorf("plan JSON: %s", b)
	}
}

// TestPacksRefused: a pack twice, a variable passed through and set by a
// pack, a mount at a pack's cache.
func TestPacksRefused(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{`command: ["x"], packs: ["go", "go"]`, `servers.s.packs[1]: runtime pack "go" is listed twice`},
		{`command: ["x"], env: ["GOFLAGS"], packs: ["go"]`, `servers.s.env[0]: environment variable GOFLAGS is passed through and set by runtime pack go`},
		{`command: ["x"], scratch: {target: "/var/cache/go", size: "1m"}, packs: ["go"]`, `target "/var/cache/go" is already used by servers.s.scratch.target`},
	} {
		_, _, err := compileSrc(t, "version: \"v1\"\nservers: s: {"+c.src+"}\n")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.src, err, c.want)
		}
	}
}

// TestPackData: every pack's entries have reasons, home paths are
// "~/...", and none grants a file that holds secrets.
func TestPackData(t *testing.T) {
	secrets := []string{"~/.npmrc", "~/.netrc", "~/.config", "~/.docker", "~/.pypirc", "~/.local/share/uv", "~/.ssh", "~/.aws", "~/.yarnrc", "~/"}
	for _, name := range baseline.PackNames() {
		k, err := baseline.PackNamed(name)
		if err != nil {
			t.Fatal(err)
		}
		if k.Proc != (k.ProcWhy != "") {
			t.Errorf("%s: proc %v without its reason, or a reason without proc", name, k.Proc)
		}
		for _, p := range k.Paths {
			if p.Why == "" || !(strings.HasPrefix(p.Path, "/") || strings.HasPrefix(p.Path, "~/")) {
				t.Errorf("%s: path %q: absolute or ~/..., with a reason", name, p.Path)
			}
			for _, s := range secrets {
				if p.Path == s || p.Path == strings.TrimSuffix(s, "/") || strings.HasPrefix(s, p.Path+"/") {
					t.Errorf("%s: %s holds %s", name, p.Path, s)
				}
			}
		}
		for _, e := range k.Env {
			if e.Why == "" {
				t.Errorf("%s: %s without a reason", name, e.Name)
			}
		}
	}
}
