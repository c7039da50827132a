package build

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writePolicy writes a policy with n servers, each with a ro and a rw mount,
// scratch, two env names and limits: a plausible, not minimal, server.
func writePolicy(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	var b strings.Builder
	b.WriteString("version: \"v1\"\nservers: {\n")
	for i := range n {
		fmt.Fprintf(&b, `	"server-%d": {
		image: "example/server:%d"
		command: ["node", "/app/index.js", "--stdio"]
		mounts: [{source: "src", target: "/workspace/src"}, {source: "out/%d", target: "/out", mode: "rw"}]
		scratch: size: "64m"
		env: ["GITHUB_TOKEN", "LOG_LEVEL"]
		limits: {memory: "512m", pids: 128, cpus: 1}
	}
`, i, i, i)
	}
	b.WriteString("}\n")
	if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

func benchmarkBuild(b *testing.B, servers int) {
	dir := writePolicy(b, servers)
	home := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		proj, err := Discover(dir)
		if err != nil {
			b.Fatal(err)
		}
		plans, err := proj.Compile(home)
		if err != nil {
			b.Fatal(err)
		}
		files, err := Artefacts(plans)
		if err != nil {
			b.Fatal(err)
		}
		if len(files) != 2*servers+1 {
			b.Fatalf("got %d files, want %d", len(files), 2*servers+1)
		}
	}
}

// BenchmarkBuild measures load + validate + compile + emit, end to end.
func BenchmarkBuild1(b *testing.B)   { benchmarkBuild(b, 1) }
func BenchmarkBuild500(b *testing.B) { benchmarkBuild(b, 500) }
