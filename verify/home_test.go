package verify

import (
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

// homePolicy grants ~/data at ~/data and hands the server "~/data/f":
// the word and HOME are the starting user's home, expanded at spawn.
const homePolicy = `version: "v1"
servers: h: {
	command: ["/bin/sh", "-c", "cat \"$1\"; echo \"HOME=$HOME\"; if cat \"$HOME/secret\" 2>/dev/null; then echo LEAK; else echo DENIED; fi", "sh", "~/data/f"]
	mounts: [{source: "~/data", target: "~/data"}]
	backends: ["bwrap", "landlock"]
}
`

// TestHomeTargetsUnderTheKernel: on bwrap (by mcpolicy run, and by the
// built wrapper through mcpolicy-launch) and Landlock, a "~/..." target
// and command word are the home of the user who starts the server (a
// temporary HOME here): the granted file is read there, HOME is that
// home, and a file of the home outside the grant stays unreadable.
func TestHomeTargetsUnderTheKernel(t *testing.T) {
	testbin.SkipShort(t, "runs bwrap and Landlock sandboxes")
	mcpolicy := testbin.Mcpolicy(t)
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home, proj := filepath.Join(base, "home"), filepath.Join(base, "proj")
	for _, f := range [][2]string{
		{filepath.Join(home, "data", "f"), "GRANTED\n"},
		{filepath.Join(home, "secret"), "SECRET\n"},
		{filepath.Join(proj, "mcpolicy.cue"), homePolicy},
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
	env := append(os.Environ(), "HOME="+home)
	build := exec.Command(mcpolicy, "build")
	build.Dir, build.Env = proj, env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	launcher := testbin.Launch(t)
	for _, backend := range []string{backendtraits.Bwrap, backendtraits.Landlock, "built bwrap"} {
		t.Run(backend, func(t *testing.T) {
			be, err := registry.Lookup(strings.TrimPrefix(backend, "built "))
			if err != nil {
				t.Fatal(err)
			}
			if why := testenv.Unavailable(be.Runtime()); why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatal(why)
				}
				t.Skip(why)
			}
			args := []string{"run", "--policy", filepath.Join(proj, "mcpolicy.cue"), "--server", "h", "--backend", backend}
			if backend == backendtraits.Landlock {
				args = []string{"exec", "--policy", filepath.Join(proj, "mcpolicy.cue"), "--server", "h"}
			}
			cmd := exec.Command(mcpolicy, args...)
			cmd.Dir, cmd.Env = proj, env
			if backend == "built bwrap" {
				// The committed spec's ${HOME}, expanded by mcpolicy-launch.
				cmd = exec.Command("/bin/sh", filepath.Join(proj, ".mcpolicy", "bwrap", "h.sh"))
				cmd.Dir, cmd.Env = proj, append(env, "MCPOLICY_LAUNCH="+launcher)
			}
			out, err := cmd.CombinedOutput()
			got := string(out)
			for _, want := range []string{"GRANTED\n", "HOME=" + home + "\n", "DENIED\n"} {
				if !strings.Contains(got, want) {
					t.Errorf("output lacks %q (err %v):\n%s", want, err, got)
				}
			}
			if strings.Contains(got, "SECRET") || strings.Contains(got, "LEAK") {
				t.Errorf("a file of the home outside the grant was read:\n%s", got)
			}
		})
	}
}
