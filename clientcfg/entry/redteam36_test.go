package entry

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// TestRedteam36RunLineNotPinned: check holds an egress entry to the line
// `mcpolicy client` writes. A line mcpolicy run starts but that is not
// that one — the earlier form spelled with -p or --flag=value, --policy
// with no pin at all, or the pinned line with a flag or a command added
// (mcpolicy run starts `-- CMD` in place of the plan's, --self binds
// another forwarder into the sandbox) — runs what the pinned plan does
// not say, and must be reported (exit 6), not passed as current.
func TestRedteam36RunLineNotPinned(t *testing.T) {
	root, out, p, _, c, l := egressEntry(t)
	reported := func(args []string) bool {
		t.Helper()
		src, err := Merge(".mcp.json", nil, c, p.Server, &Launch{Command: l.Command, Env: l.Env, Args: args}, false)
		if err != nil {
			t.Fatal(err)
		}
		cfg := filepath.Join(root, ".mcp.json")
		os.WriteFile(cfg, src, 0o644)
		ts, err := clientcfg.Read(cfg, "/home/dev")
		if err != nil || len(ts) != 1 {
			t.Fatalf("read back: %v %v", ts, err)
		}
		return len(clientcfg.NotManaged([]*compiler.Plan{p}, ts, out))+len(clientcfg.Pins([]*compiler.Plan{p}, ts)) > 0
	}
	if reported(l.Args) {
		t.Fatalf("the entry just written (%q) is reported", l.Args)
	}
	pinned := func(extra ...string) []string { // extra before the plan file
		n := len(l.Args) - 1
		return append(append(slices.Clone(l.Args[:n]), extra...), l.Args[n])
	}
	for name, args := range map[string][]string{
		"earlier form, -p":           {"run", "-p", root, "--server", p.Server, "--backend", "bwrap", "--plan", p.Hash},
		"earlier form, --flag=value": {"run", "--policy=" + root, "--server", p.Server, "--backend", "bwrap", "--plan=" + p.Hash},
		"--policy, no pin":           artefact.RunPolicyArgs(root, p.Server, "bwrap"),
		"pinned, -- CMD":             append(slices.Clone(l.Args), "--", "/bin/sh", "-c", "id"),
		"pinned, --self":             pinned("--self", filepath.Join(root, "data", "mcpolicy")),
		"pinned, --hosts":            pinned("--hosts", filepath.Join(root, "data", "hosts")),
		"pinned, --log -":            pinned("--log", "-"),
		"pinned, --policy":           pinned("--policy", root),
		"pinned, --image":            pinned("--image", "evil:latest"),
	} {
		if !reported(args) {
			t.Errorf("%s: mcpolicy run %q passes check as current", name, args)
		}
	}
}
