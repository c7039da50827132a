package lint_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/clientcfg/clientcfgtest"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// BenchmarkLintClients1000 lints a generated config of 1,000 entries
// (docker, podman, npx, uvx, bwrap, sandbox-exec: clientcfgtest.Config) as
// `mcpolicy lint --client` does, read, run and written: as written (a
// config that is not this machine's), and --this-machine (granted folders
// of this machine looked into, /usr and / not walked). Issue 16 asks for
// less than 200 ms an op.
func BenchmarkLintClients1000(b *testing.B) {
	dir := b.TempDir()
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, clientcfgtest.Config(1000), 0o644); err != nil {
		b.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "profiles"), 0o755)
	os.WriteFile(filepath.Join(dir, "profiles", "server.sb"), []byte("(version 1)(deny default)\n"), 0o644)
	for _, c := range []struct {
		name string
		o    clientcfg.Options
	}{
		{"as-written", clientcfg.Options{Home: "/home/linter"}},
		{"this-machine", clientcfg.Options{Home: b.TempDir(), ThisMachine: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				ts, _, err := clientcfg.ReadLint(file, c.o)
				if err != nil {
					b.Fatal(err)
				}
				if len(ts) != 1000 {
					b.Fatalf("%d targets", len(ts))
				}
				if err := lint.Write(io.Discard, lint.Run(ts, lint.Options{}), "text", "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
