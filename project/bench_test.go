package project

import (
	"path/filepath"
	"testing"

	"github.com/mcpolicy/mcpolicy/bench"
	"github.com/mcpolicy/mcpolicy/compiler"
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

// build discovers, compiles and emits the project at dir.
func build(tb testing.TB, dir, home string) (*Project, []*compiler.Plan, map[string][]byte) {
	tb.Helper()
	proj, err := Discover(dir)
	if err != nil {
		tb.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err != nil {
		tb.Fatal(err)
	}
	files, err := Artefacts(plans)
	if err != nil {
		tb.Fatal(err)
	}
	return proj, plans, files
}

func benchmarkBuild(b *testing.B, servers int) {
	dir := writePolicy(b, servers)
	home := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		_, _, files := build(b, dir, home)
		if len(files) != 2*servers+1 {
			b.Fatalf("got %d files, want %d", len(files), 2*servers+1)
		}
	}
}

// BenchmarkBuild measures load + validate + compile + emit, end to end.
func BenchmarkBuild1(b *testing.B)   { benchmarkBuild(b, 1) }
func BenchmarkBuild500(b *testing.B) { benchmarkBuild(b, 500) }

// BenchmarkWrite500 measures writing a 500-server build's artefacts (then,
// unchanged, reading them back to compare) through hostfile, with every
// plan's read-write sources guarded: resolving the guarded folders once a
// file, not once a build, made `mcpolicy build` of it take 926 ms.
func BenchmarkWrite500(b *testing.B) {
	dir := writePolicy(b, 500)
	home := b.TempDir()
	proj, plans, files := build(b, dir, home)
	untrusted := proj.Writable(plans, home)
	out := filepath.Join(dir, ".mcpolicy")
	b.ResetTimer()
	for b.Loop() {
		if err := Write(out, files, untrusted); err != nil {
			b.Fatal(err)
		}
	}
}
