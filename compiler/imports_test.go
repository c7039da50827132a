package compiler

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering: the compiler and the loader read policies and write plans;
// they never reach up into the runtime (the launcher, the egress proxy,
// the supervisor), the evidence (prove, why, doctor) or across into a backend, so a plan means the same whatever runs it.
// Each edge into a banned package is reported from the package that adds it.
func TestLayering(t *testing.T) {
	const mod = "github.com/mcpolicy/mcpolicy/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}",
		mod+"compiler/...", mod+"schema/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	banned := func(pkg string) bool {
		rel, ok := strings.CutPrefix(pkg, mod)
		for _, b := range []string{"runtime", "evidence", "emit"} {
			if ok && (rel == b || strings.HasPrefix(rel, b+"/")) {
				return true
			}
		}
		return false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || banned(f[0]) {
			continue
		}
		for _, imp := range f[1:] {
			if banned(imp) {
				t.Errorf("%s imports %s: compiler/... and schema/... must not depend on the runtime, the evidence or an emitter", f[0], imp)
			}
		}
	}
}
