package entry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestRunEntryReadBack: an egress entry read back pins the plan file build
// wrote, which check (NotManaged, Pins) takes as current; the plan file
// edited after the build is TAMPERED, and the earlier entry that compiled
// the policy at each start is reported for writing again.
func TestRunEntryReadBack(t *testing.T) {
	root, out, p, planFile, c, l := egressEntry(t)
	read := func(l *Launch) []*clientcfg.UnmanagedEntry {
		t.Helper()
		src, err := Merge(".mcp.json", nil, c, p.Server, l, false)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(root, ".mcp.json")
		os.WriteFile(cfg, src, 0o644)
		ts, err := clientcfg.Read(cfg, "/home/dev")
		if err != nil || len(ts) != 1 {
			t.Fatalf("read back: %v %v", ts, err)
		}
		var un []*clientcfg.UnmanagedEntry
		for _, u := range clientcfg.NotManaged([]*compiler.Plan{p}, ts, out) {
			un = append(un, &u)
		}
		if len(un) > 0 {
			return un
		}
		if ts[0].Artefact != planFile || ts[0].Digest == "" {
			t.Errorf("the entry pins %q %q, want %s", ts[0].Artefact, ts[0].Digest, planFile)
		}
		if pins := clientcfg.Pins([]*compiler.Plan{p}, ts); len(pins) != 0 {
			t.Errorf("pins: %+v", pins)
		}
		return un
	}
	if un := read(l); len(un) != 0 {
		t.Errorf("the entry just written: %+v", un[0])
	}
	legacy := &Launch{Command: l.Command, Env: l.Env, Args: append(artefact.RunPolicyArgs(root, p.Server, "bwrap"), "--plan", p.Hash)}
	if un := read(legacy); len(un) != 1 || !strings.Contains(un[0].What, "mcpolicy client TARGET --write") {
		t.Errorf("the earlier entry: %v, want it reported for writing again", un)
	}
	// The plan file edited after the build, still naming the plan.
	read(l)
	edited := strings.Replace(string(p.JSON()), `"api.github.com:443"`, `"*.github.com:443"`, 1)
	os.WriteFile(planFile, []byte(edited), 0o644)
	ts, _ := clientcfg.Read(filepath.Join(root, ".mcp.json"), "/home/dev")
	if pins := clientcfg.Pins([]*compiler.Plan{p}, ts); len(pins) != 1 || !pins[0].Tampered {
		t.Errorf("the plan file edited: %+v, want TAMPERED", pins)
	}
}

// egressEntry builds, in a fresh project, the plan file of a server with
// an egress allowlist as build writes it, and the claude-code entry that
// pins it: the project root, the output folder, the plan, its file, the
// client and the entry.
func egressEntry(t *testing.T) (root, out string, p *compiler.Plan, planFile string, c *clientcfg.Client, l *Launch) {
	t.Helper()
	root = t.TempDir()
	out = filepath.Join(root, ".mcpolicy")
	p = seedPlan()
	p.Network = compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("api.github.com:443"), ProxyPort: compiler.ProxyPort(p.Server)}
	p.Runtime = compiler.Runtime{Name: "static"}
	p.Command = []string{"/usr/bin/node", "server.js"}
	planFile = filepath.Join(out, "plan", p.Server+".json")
	os.MkdirAll(filepath.Dir(planFile), 0o755)
	if err := os.WriteFile(planFile, p.JSON(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _ = clientcfg.LookupClient("claude-code")
	l, err := LaunchFor(c, p, "bwrap", root, "/home/dev", out, fakeELF(t, false), "", false)
	if err != nil {
		t.Fatal(err)
	}
	return root, out, p, planFile, c, l
}
