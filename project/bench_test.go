package project

import (
	"testing"

	"github.com/mcpolicy/mcpolicy/bench"
)

// writePolicy writes bench's n-server policy (mounts' sources created).
func writePolicy(tb testing.TB, n int) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := bench.WriteServers(dir, n); err != nil {
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
