package prove_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/evidence/prove"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// TestProveToolLayer: the go-sdk memory server (from the module proxy)
// behind a tools section and its pin: on bwrap, landlock, docker and
// podman, prove calls a denied tool (delete_entities, a real one) and a
// search whose query is longer than its maxBytes, through the relay its
// launch starts; both are refused by the relay, naming the rule, in the
// tool layer's section. Without the tools section: no such rows.
func TestProveToolLayer(t *testing.T) {
	needEngines(t)
	ci := os.Getenv("CI") == "true"
	server, err := testbin.ExternalPackage("github.com/modelcontextprotocol/go-sdk", "v1.8.0", "github.com/modelcontextprotocol/go-sdk/examples/server/memory")
	if fe := (*testbin.FetchError)(nil); errors.As(err, &fe) && !ci {
		t.Skipf("the module proxy: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	base, bin := workspace(t, "mcpolicy-prove-tools-")
	testbin.Install(t, testbin.Launch(t), filepath.Join(base, "mcpolicy-launch"))
	project := filepath.Join(base, "proj")
	testbin.Install(t, server, filepath.Join(project, "bin", "memory"))
	exec.Command("chmod", "-R", "a+rX", project).Run()
	tag := fmt.Sprintf("localhost/mcpolicy-prove-tools:%d", os.Getpid())
	for _, engine := range []string{"docker", "podman"} {
		if exec.Command(engine, "info").Run() != nil {
			continue
		}
		cmd := exec.Command(engine, "import", "-", tag)
		cmd.Stdin = strings.NewReader(emptyTar())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s import: %v\n%s", engine, err, out)
		}
		t.Cleanup(func() { exec.Command(engine, "rmi", "-f", tag).Run() })
	}
	policy := fmt.Sprintf(`version: "v1"
servers: memory: {
	image: %q
	command: ["/data/bin/memory"]
	runtime: "static"
	backends: ["bwrap", "landlock", "docker", "podman"]
	mounts: [{source: ".", target: "/data"}]
	TOOLS
}
`, tag)
	write := func(tools string) {
		os.WriteFile(filepath.Join(project, "mcpolicy.cue"), []byte(strings.Replace(policy, "TOOLS", tools, 1)), 0o644)
	}
	write("")
	if out, err := exec.Command(bin, "pin", "-p", project, "memory").CombinedOutput(); err != nil {
		t.Fatalf("mcpolicy pin: %v\n%s", err, out)
	}
	write(`tools: {allow: ["read_graph", "search_*"], deny: ["delete_*"], args: search_nodes: query: {maxBytes: 64}, pin: true}`)
	home, _ := plantCredentials(base)
	rep := proveReport(t, bin, project, home, filepath.Join(base, "evidence"))
	md, _ := os.ReadFile(filepath.Join(base, "evidence", "evidence.md"))
	want := map[string]string{"a denied tool": "servers.memory.tools.deny[0]", "an argument out of bounds": "servers.memory.tools.args.search_nodes.query"}
	for _, be := range rep.Backends {
		if be.Skipped != "" {
			if ci {
				t.Errorf("%s was not run in CI: %s", be.Backend, be.Skipped)
			}
			continue
		}
		t.Logf("%s: %d tool rows", be.Backend, len(be.Tools))
		if len(be.Tools) != 2 {
			t.Errorf("%s: %d tool rows, want 2: %+v", be.Backend, len(be.Tools), be.Tools)
			continue
		}
		for _, row := range be.Tools {
			if row.Skipped != "" || row.Result != prove.RelayRefused || !row.Agrees || row.Rule != want[row.What] || !strings.Contains(row.Message, row.Rule) || row.Note != "" {
				t.Errorf("%s: %s: %+v", be.Backend, row.What, row)
			}
			if row.What == "a denied tool" && row.Tool != "delete_entities" {
				t.Errorf("%s: the denied call names %q, not a tool the server has", be.Backend, row.Tool)
			}
		}
	}
	section := "## The tool layer: refused by the relay (policy), not the kernel"
	if i := bytes.Index(md, []byte(section)); i < 0 || bytes.Contains(md[:i], []byte("delete_entities")) {
		t.Errorf("evidence.md has no tool layer section, or a tool row before it:\n%s", md)
	}

	write("")
	rep = proveReport(t, bin, project, home, filepath.Join(base, "evidence2"), "-b", "bwrap")
	for _, be := range rep.Backends {
		if len(be.Tools) != 0 {
			t.Errorf("%s: tool rows without a tools section: %+v", be.Backend, be.Tools)
		}
	}
}
