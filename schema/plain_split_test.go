package schema

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestPlainSplitNested: with enough servers for validPlain to split them
// between goroutines, a nested violation (closedness of #Mount, #Scratch,
// #Egress, #Limits, #Waiver; a regexp; a disjunction) in any part is found,
// and the policy read when valid is CUE's.
func TestPlainSplitNested(t *testing.T) {
	if testing.Short() {
		t.Skip("20 policies of 256 servers, validated in parallel parts: 15 s; make test runs it")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	bad := []string{
		`mounts: [{source: "s", target: "/t", extra: 1}]`,
		`mounts: [{source: "s", target: "/t", mode: "rwx"}]`,
		`mounts: [{source: "s", target: "t"}]`,
		`network: {allow: ["h:1"], deny: ["x:1"]}`,
		`network: "all"`,
		`network: allow: ["h"]`,
		`env: ["A=1"]`,
		`unprotect: [".gitx"]`,
		`accept: ["everything"]`,
		`scratch: {size: "1m", extra: 1}`,
		`scratch: {size: "0"}`,
		`limits: {pids: 0}`,
		`limits: {extra: 1}`,
		`waive: [{rule: "R", reason: "r", extra: 1}]`,
		`backends: ["qemu"]`,
		`runtime: "java"`,
		`user: "root"`,
		`image: "-x"`,
		`command: []`,
		`workdir: "rel"`,
	}
	good := `mounts: [{source: "s", target: "/t", mode: "rw"}], network: allow: ["h:1"], env: ["A"], unprotect: [".git"], scratch: size: "1m", limits: {pids: 3, cpus: 0.5}, waive: [{rule: "R", reason: "r"}], accept: ["rw-holds-project"], user: "0:0"`
	dir := t.TempDir()
	file := filepath.Join(dir, "mcpolicy.cue")
	n := 4 * parallelFrom
	for i, b := range append([]string{""}, bad...) {
		at := (i * 37) % n
		var s strings.Builder
		s.WriteString("version: \"v1\"\nservers: {\n")
		for j := range n {
			extra := good
			if j == at && b != "" {
				extra = b
			}
			fmt.Fprintf(&s, "\t\"s%d\": {command: [\"x\"], %s}\n", j, extra)
		}
		s.WriteString("}\n")
		src := []byte(s.String())
		plain := checkAgree(t, dir, "mcpolicy.cue", src)
		_, err := loadBytes(file, src, dir, throughCUE)
		if (b == "") != (err == nil) || (b == "") != plain {
			t.Errorf("%q at server %d: plain=%v, CUE error %v", b, at, plain, err)
		}
	}
}
