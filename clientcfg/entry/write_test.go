package entry

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

func seedPlan() *compiler.Plan {
	return &compiler.Plan{
		Server: "code-index", Image: "code-index:1.7.2", Hash: "sha256:00",
		User:    compiler.User{UID: 1000, GID: 1000},
		Network: compiler.Network{Mode: "none"},
		Mounts:  []compiler.Mount{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "shop"}, Target: "/workspace", Mode: compiler.ReadWrite}},
		Scratch: &compiler.Scratch{Target: "/tmp", SizeBytes: 256 << 20},
		Env:     []compiler.EnvGrant{{Name: "GITHUB_TOKEN"}},
		// Built for every backend the tests write entries for.
		Backends: []string{"bwrap", "docker", "landlock", "seatbelt"},
	}
}

// TestEntryOnlyForBuiltBackends: an entry is written only for a backend
// the server is built for (podman runs the docker artefact).
func TestEntryOnlyForBuiltBackends(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-desktop")
	p := seedPlan()
	p.Backends = []string{"docker"}
	built(t, "/p/.mcpolicy", p)
	if _, err := LaunchFor(c, p, "podman", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false); err != nil {
		t.Errorf("podman for a docker server: %v", err)
	}
	if _, err := LaunchFor(c, p, "landlock", "/p", "/home/dev", "/p/.mcpolicy", "/usr/local/bin/mcpolicy", "", false); err == nil || !strings.Contains(err.Error(), "not built for backend landlock") {
		t.Errorf("landlock for a docker-only server: %v", err)
	}
}

const vscodeFile = `{
  // my servers, by hand
  "servers": {
    "other": {"type": "stdio", "command": "uvx", "args": ["x"],}, // keep me
  },
  "inputs": [],
}
`

// TestMergeChangesOnlyTheEntry: comments, trailing commas and the other
// entry stay byte for byte; the entry reads back as the same plan.
func TestMergeChangesOnlyTheEntry(t *testing.T) {
	c, _ := clientcfg.LookupClient("vscode")
	root := t.TempDir()
	built(t, filepath.Join(root, ".mcpolicy"), seedPlan())
	l, err := LaunchFor(c, seedPlan(), "docker", root, "/home/dev", filepath.Join(root, ".mcpolicy"), "/usr/bin/mcpolicy", "", true)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Merge(".vscode/mcp.json", []byte(vscodeFile), c, "code-index", l, false)
	if err != nil {
		t.Fatal(err)
	}
	// The entry is one insertion: the original bytes stand before and after it.
	if !insertedOnly(vscodeFile, string(out)) {
		t.Errorf("the rest of the file changed:\n%s", out)
	}
	file := filepath.Join(root, ".vscode", "mcp.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, out, 0o644)
	ts, err := clientcfg.Read(file, "/home/dev")
	if err != nil {
		t.Fatal(err)
	}
	var got *compiler.Plan
	for _, tg := range ts {
		if tg.Server == "code-index" {
			got = tg.Plan
		}
	}
	if got == nil || len(got.Mounts) != 1 || got.Mounts[0].Source != seedPlan().Mounts[0].Source || got.Mounts[0].Mode != compiler.ReadWrite ||
		got.Network.Mode != "none" || got.Scratch == nil || got.Scratch.SizeBytes != 256<<20 {
		t.Errorf("read back: %+v", got)
	}
	if l.Env["GITHUB_TOKEN"] != "${env:GITHUB_TOKEN}" {
		t.Errorf("env passthrough: %v", l.Env)
	}
}

func TestMergeRefusals(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-desktop")
	l := &Launch{Command: "/usr/bin/docker", Args: []string{"run", "--label", "org.mcpolicy.plan=sha256:1", "img"}}
	if _, err := Merge("f", []byte("{ not json"), c, "s", l, false); err == nil || !strings.Contains(err.Error(), "left untouched") {
		t.Errorf("unparsable: %v", err)
	}
	foreign := []byte(`{"mcpServers": {"s": {"command": "npx", "args": ["srv"]}}}`)
	var fe *ErrForeign
	if _, err := Merge("f", foreign, c, "s", l, false); !errors.As(err, &fe) {
		t.Errorf("foreign entry replaced without --force: %v", err)
	}
	if _, err := Merge("f", foreign, c, "s", l, true); err != nil {
		t.Errorf("--force: %v", err)
	}
	ours, _ := Merge("f", []byte(`{"mcpServers": {}}`), c, "s", l, false)
	if _, err := Merge("f", ours, c, "s", l, false); err != nil {
		t.Errorf("replacing our own entry: %v", err)
	}
}

func TestMergeTOML(t *testing.T) {
	c, _ := clientcfg.LookupClient("codex")
	src := "# my codex config\nmodel = \"x\"\n\n[mcp_servers.other]\ncommand = \"uvx\" # keep\n\n[profiles.a]\nk = 1\n"
	l := &Launch{Command: "/usr/bin/mcpolicy", Args: []string{"exec", "--policy", "/p", "--server", "s"}, Env: map[string]string{"PATH": "/usr/bin"}}
	out, err := Merge("config.toml", []byte(src), c, "s", l, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), src) || !strings.Contains(string(out), `[mcp_servers.s]`) {
		t.Errorf("appended wrongly:\n%s", out)
	}
	again, err := Merge("config.toml", out, c, "s", l, false)
	if err != nil || string(again) != string(out) {
		t.Errorf("rewriting our own table is not idempotent (%v):\n%s", err, again)
	}
	if _, err := Merge("config.toml", []byte(src), c, "other", l, false); err == nil {
		t.Errorf("a foreign table was replaced")
	}
}

// insertedOnly reports whether b is a with one run of bytes inserted.
func insertedOnly(a, b string) bool {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	q := 0
	for q < len(a)-p && q < len(b)-p && a[len(a)-1-q] == b[len(b)-1-q] {
		q++
	}
	return p+q >= len(a)
}

// fakeELF writes an ELF header with no program headers (so no dynamic
// loader) or, with interp, one PT_INTERP header: enough for CheckStatic.
func fakeELF(t *testing.T, interp bool) string {
	t.Helper()
	h := make([]byte, 64+56)
	copy(h, "\x7fELF\x02\x01\x01")
	le := func(off int, v uint64, n int) {
		for i := 0; i < n; i++ {
			h[off+i] = byte(v >> (8 * i))
		}
	}
	le(16, 2, 2)  // ET_EXEC
	le(18, 62, 2) // x86-64
	le(20, 1, 4)  // version
	le(52, 64, 2) // header size
	le(54, 56, 2) // program header size
	if interp {
		le(32, 64, 8) // program headers at 64
		le(56, 1, 2)  // one of them
		le(64, 3, 4)  // PT_INTERP
	}
	p := filepath.Join(t.TempDir(), "mcpolicy")
	if err := os.WriteFile(p, h, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEgressEntryRunsTheSupervisor: a plan with an allowlist is started by
// mcpolicy run (which runs the proxy), never by the bare artefact; a
// dynamically linked mcpolicy, which cannot be the in-sandbox forwarder,
// and the landlock backend, which cannot enforce hosts, are refused.
func TestEgressEntryRunsTheSupervisor(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-desktop")
	p := seedPlan()
	p.Command = []string{"/usr/bin/node", "server.js"}
	p.Network = compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("api.github.com:443"), ProxyPort: compiler.ProxyPort(p.Server)}
	p.Accept = []compiler.Accepted{{Name: "seatbelt-scratch-dir"}} // seatbelt's scratch is a folder
	p.Runtime = compiler.Runtime{Name: "static"}
	static := fakeELF(t, false)
	built(t, "/p/.mcpolicy", p)
	for _, backend := range []string{"docker", "podman", "bwrap", "seatbelt"} {
		c := c
		if backend == "seatbelt" { // refused for Claude Desktop: no env file (TestEnvGrantsPerClient)
			c, _ = clientcfg.LookupClient("claude-code")
		}
		l, err := LaunchFor(c, p, backend, "/p", "/home/dev", "/p/.mcpolicy", static, "", false)
		if err != nil {
			t.Fatalf("%s: %v", backend, err)
		}
		want := []string{"run", "--backend", backend, "--project-root", "/p", "--sha256", artefact.Digest(p.JSON()), "/p/.mcpolicy/plan/code-index.json"}
		if c.Name == "claude-desktop" {
			want = []string{"run", "--backend", backend, "--project-root", "/p", "--env-file", "/home/dev/.config/mcpolicy/env", "--sha256", artefact.Digest(p.JSON()), "/p/.mcpolicy/plan/code-index.json"}
		}
		if l.Command != static || strings.Join(l.Args, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %s %q, want %s %q", backend, l.Command, l.Args, static, want)
		}
		if !clientcfg.Managed(l.Command, l.Args) {
			t.Errorf("%s: the run entry is not recognised as mcpolicy's", backend)
		}
	}
	if _, err := LaunchFor(c, p, "docker", "/p", "/home/dev", "/p/.mcpolicy", fakeELF(t, true), "", false); err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Errorf("a dynamically linked mcpolicy: %v", err)
	}
	if _, err := LaunchFor(c, p, "landlock", "/p", "/home/dev", "/p/.mcpolicy", static, "", false); err == nil || !strings.Contains(err.Error(), "not enforceable by backend landlock") {
		t.Errorf("landlock: %v", err)
	}
	if _, err := LaunchFor(c, p, "firejail", "/p", "/home/dev", "/p/.mcpolicy", static, "", false); err == nil || !strings.Contains(err.Error(), "unknown backend") {
		t.Errorf("an unknown backend: %v", err)
	}
}
