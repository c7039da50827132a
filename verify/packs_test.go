package verify

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
)

// packsPolicy runs the host's go under the go pack: the toolchain from
// its GOROOT, GOMODCACHE at the invoking user's ~/go/pkg/mod (read-only),
// GOCACHE in the pack's bounded cache, where go build writes.
const packsPolicy = `version: "v1"
servers: g: {
	command: ["/bin/sh", "-c", "go version && go env GOMODCACHE && cd %[1]s && go build -o /dev/null . && echo BUILT; if touch \"$GOMODCACHE/planted\" 2>/dev/null; then echo WROTE; else echo READONLY; fi"]
	mounts: [{source: "mod", target: %[1]q}]
	scratch: size: "64m"
	packs: ["go"]
	backends: ["bwrap", "landlock"]
}
`

// TestGoPackRunsTheHostsGo: on bwrap and Landlock (the real kernel), a
// policy with the go pack runs the host's go version and go env
// GOMODCACHE, builds a module with GOCACHE in the pack's cache, and
// cannot write to the module cache.
func TestGoPackRunsTheHostsGo(t *testing.T) {
	testbin.SkipShort(t, "runs go in bwrap and Landlock sandboxes")
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("no go here: %v", err)
	}
	if root := strings.TrimSpace(string(goroot)); root != "/usr/local/go" && !strings.HasPrefix(root, "/usr/lib/go") {
		t.Skipf("go's GOROOT %s is not where the go pack looks on this machine's baseline", root)
	}
	mcpolicy := testbin.Mcpolicy(t)
	// Outside /tmp: the scratch tmpfs there would hide them.
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-packs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home, proj := filepath.Join(base, "home"), filepath.Join(base, "proj")
	modCache := filepath.Join(home, "go", "pkg", "mod")
	mod := filepath.Join(proj, "mod") // its own target: Landlock runs with host paths
	for _, f := range [][2]string{
		{filepath.Join(modCache, "example.com", "dep@v1.0.0", "dep.go"), "package dep\n"},
		{filepath.Join(mod, "go.mod"), "module example.com/m\n\ngo 1.21\n"},
		// A package that imports nothing: go build compiles it into the
		// pack's GOCACHE (what is checked) without compiling the runtime
		// first, twenty seconds of the two cores per backend.
		{filepath.Join(mod, "m.go"), "package m\n\nfunc F() int { return 1 }\n"},
		{filepath.Join(proj, "mcpolicy.cue"), fmt.Sprintf(packsPolicy, mod)},
	} {
		if err := os.MkdirAll(filepath.Dir(f[0]), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f[0], []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(base, 0o755); err != nil { // the plan's user reaches it
		t.Fatal(err)
	}

	for _, c := range []struct{ backend string }{{backendtraits.Bwrap}, {backendtraits.Landlock}} {
		t.Run(c.backend, func(t *testing.T) {
			be, err := registry.Lookup(c.backend)
			if err != nil {
				t.Fatal(err)
			}
			if why := testenv.Unavailable(be.Runtime()); why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatal(why)
				}
				t.Skip(why)
			}
			args := []string{"run", "--policy", filepath.Join(proj, "mcpolicy.cue"), "--server", "g", "--backend", c.backend}
			if c.backend == backendtraits.Landlock {
				args = []string{"exec", "--policy", filepath.Join(proj, "mcpolicy.cue"), "--server", "g"}
			}
			cmd := exec.Command(mcpolicy, args...)
			cmd.Dir, cmd.Env = proj, append(os.Environ(), "HOME="+home)
			out, err := cmd.CombinedOutput()
			got := string(out)
			for _, want := range []string{"go version go", modCache + "\n", "BUILT\n", "READONLY\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q (err %v):\n%s", want, err, got)
				}
			}
			if _, err := os.Stat(filepath.Join(modCache, "planted")); err == nil {
				t.Errorf("the server wrote into the module cache")
			}
		})
	}
}
