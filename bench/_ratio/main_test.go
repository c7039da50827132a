package main

import (
	"strings"
	"testing"
)

// TestRatio: medians per value, each time as a ratio to the base's, one
// table per group of sub-benchmarks.
func TestRatio(t *testing.T) {
	in := `goos: linux
BenchmarkInitialize/launch=bare-2        3   40000000 ns/op      0 resident-kB
BenchmarkInitialize/launch=bare-2        3   30000000 ns/op      0 resident-kB
BenchmarkInitialize/launch=bare-2        3   20000000 ns/op      0 resident-kB
BenchmarkInitialize/launch=bwrap-entry-2 3   90000000 ns/op   8000 resident-kB
BenchmarkEgress/op=bulk/path=direct-2   10  1000 ns/op  1000 MB/s
BenchmarkEgress/op=bulk/path=proxy-2    10  1250 ns/op   800.25 MB/s
PASS
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out, "path", ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"BenchmarkInitialize/launch=* (medians; ratio = time / launch=bare's)",
		"launch=bare  30.00ms  1.00x",
		"launch=bwrap-entry  90.00ms  3.00x  8000.0",
		"BenchmarkEgress/op=bulk/path=*",
		"path=proxy  1.2µs  1.25x   800.2",
	} {
		if !strings.Contains(squeeze(out.String()), squeeze(want)) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }
