package bench

import (
	"fmt"
	"io"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/project"
)

// BenchmarkCompile is what `mcpolicy build` and `mcpolicy lint` do in
// process, for one generated policy of 1 and of 500 servers: load
// (parse, validate against the schema, decode), compile, render every
// artefact, then lint the plans. Profile it with
//
//	go test ./bench -run '^$' -bench Compile/servers=500 -cpuprofile cpu.out
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{1, 500} {
		b.Run(fmt.Sprintf("servers=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			if err := WriteServers(dir, n); err != nil {
				b.Fatal(err)
			}
			home := b.TempDir()
			for b.Loop() {
				proj, err := project.Discover(dir)
				if err != nil {
					b.Fatal(err)
				}
				plans, err := proj.Compile(home)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := project.Artefacts(plans); err != nil {
					b.Fatal(err)
				}
				ts := lint.PolicyTargets(plans, proj.Root, home)
				project.MarkUnbuildable(ts)
				if err := lint.Write(io.Discard, lint.Run(ts, lint.Options{MaxGrants: 4}), "text", "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLint is the lint pass alone over the plans of a generated
// 500-server policy (compiled once): its rules, its walks of the granted
// folders and the report. Profile it with
//
//	go test ./bench -run '^$' -bench Lint -cpuprofile cpu.out
func BenchmarkLint(b *testing.B) {
	dir := b.TempDir()
	if err := WriteServers(dir, 500); err != nil {
		b.Fatal(err)
	}
	home := b.TempDir()
	proj, err := project.Discover(dir)
	if err != nil {
		b.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		ts := lint.PolicyTargets(plans, proj.Root, home)
		project.MarkUnbuildable(ts)
		if err := lint.Write(io.Discard, lint.Run(ts, lint.Options{MaxGrants: 4}), "text", "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
