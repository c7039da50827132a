package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// realExamples are the ready policies of examples/ for the servers of
// TestRealServers and TestFilesystemServer, and the seed's own policy
// (its read-write project on every Linux backend: verify/escape runs it).
var realExamples = []string{"gopls", "mcp-grafana", "memory", "filesystem", "npx-notes", "uvx-notes", "seed"}

// exampleNeeds are what a user of an example creates first, as its
// policy's comment says: a read-write source must exist when the policy
// is compiled ("/" ends a folder; anything else is an empty file).
var exampleNeeds = map[string][]string{
	"filesystem": {"Documents/mcp/"},
	"memory":     {".local/share/mcp-memory/memory.json"},
}

// TestExamples builds each example with `mcpolicy build --check`: its
// committed .mcpolicy/ is what the policy builds to, for any user (an
// empty home, a copy of the folder elsewhere), and holds no path of the
// machine that built it.
func TestExamples(t *testing.T) {
	testbin.SkipShort(t, "building the examples")
	mcpolicy := testbin.Mcpolicy(t)
	root, err := testbin.ModuleRoot()
	must(t, err)
	for _, name := range realExamples {
		t.Run(name, func(t *testing.T) {
			// A copy elsewhere, built by a user with another home: a
			// machine path in an artefact would make it stale here.
			dir := filepath.Join(t.TempDir(), name)
			must(t, os.CopyFS(dir, os.DirFS(filepath.Join(root, "examples", name))))
			home := t.TempDir()
			for _, need := range exampleNeeds[name] {
				p := filepath.Join(home, need)
				must(t, os.MkdirAll(filepath.Dir(p), 0o755))
				if strings.HasSuffix(need, "/") {
					must(t, os.MkdirAll(p, 0o755))
				} else {
					must(t, os.WriteFile(p, nil, 0o644))
				}
			}
			cmd := exec.Command(mcpolicy, "build", "--check", dir)
			cmd.Env = append(os.Environ(), "HOME="+home)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("mcpolicy build --check examples/%s: %v\n%s\n(the examples use issue #34's packs, setenv and ~/ targets: "+
					"they build once those are in the schema, and their .mcpolicy/ is then written by `mcpolicy build examples/%s`)", name, err, out, name)
			}
			err := filepath.WalkDir(filepath.Join(root, "examples", name, ".mcpolicy"), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				home, _ := os.UserHomeDir()
				for _, machine := range []string{root, home + "/"} {
					if strings.Contains(string(b), machine) {
						t.Errorf("%s holds this machine's path %s", p, machine)
					}
				}
				return nil
			})
			must(t, err)
		})
	}
}
