package launch_test

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/launch"
	"github.com/mcpolicy/mcpolicy/probe"
)

// copyTree copies the bundled example, world-readable and -writable, so an
// unprivileged user can run it too.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o777)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	filepath.Walk(to, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			os.Chmod(p, map[bool]os.FileMode{true: 0o777, false: 0o666}[fi.IsDir()])
		}
		return nil
	})
}

// TestExecSeedExample runs `mcpolicy exec` on the bundled code-index policy:
// the probe (copied into the granted project, so the policy itself lets it
// run) reads the project, and is refused the planted credentials with
// EACCES — as root, and as an unprivileged user.
func TestExecSeedExample(t *testing.T) {
	if abi := launch.DetectHost().ABI; abi < landlock.MinABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock ABI %d here; CI machines must have Landlock", abi)
		}
		t.Skipf("Landlock ABI %d here", abi)
	}
	// Outside /tmp: the example's scratch is a tmpfs mounted over /tmp.
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-exec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	bin := filepath.Join(base, "mcpolicy")
	build := exec.Command("go", "build", "-o", bin, "../cmd/mcpolicy")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	example := filepath.Join(base, "code-index")
	copyTree(t, "../examples/code-index", example)
	probeBin := filepath.Join(example, "shop", ".probe")
	copyTree(t, bin, probeBin)
	os.Chmod(probeBin, 0o755)
	home := filepath.Join(base, "home")
	os.MkdirAll(filepath.Join(home, ".aws"), 0o755)
	creds := filepath.Join(home, ".aws", "credentials")
	os.WriteFile(creds, []byte("[default]\naws_secret_access_key = planted\n"), 0o644)

	readme := filepath.Join(example, "shop", "README.md")
	expected := map[string]string{
		"read:" + readme: "ok",
		"read:" + creds:  "EACCES",
		"list:" + home:   "EACCES",
		"create:" + filepath.Join(example, "x.txt"):           "EACCES", // the policy file's folder is not granted
		"create:" + filepath.Join(example, "shop", "new.txt"): "ok",
		"read:/etc/shadow": "EACCES",
	}
	var attempts []string
	for a := range expected {
		attempts = append(attempts, a)
	}
	users := [][]string{{}} // as we are
	if os.Getuid() == 0 {
		users = append(users, []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups"})
	}
	for _, as := range users {
		name := "invoking user"
		if len(as) > 0 {
			name = "uid 1000"
		}
		t.Run(name, func(t *testing.T) {
			os.Remove(filepath.Join(example, "shop", "new.txt"))
			want := maps.Clone(expected)
			args := append(append([]string{}, as...), bin, "exec", "--policy", example, "--server", "code-index", "--", probeBin, "probe")
			cmd := exec.Command(args[0], append(args[1:], attempts...)...)
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("%v: %v\n%s", args, err, stderr)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var r probe.Result
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("probe output %q: %v", line, err)
				}
				key := string(r.Op) + ":" + r.Target
				if r.Result != want[key] {
					t.Errorf("%s: got %s, want %s", key, r.Result, want[key])
				}
				delete(want, key)
			}
			if len(want) > 0 {
				t.Errorf("no result for %v", want)
			}
		})
	}
}

// TestFailsClosed: without Landlock (or below ABI 3) nothing is started.
func TestFailsClosed(t *testing.T) {
	p := &compiler.Plan{Server: "s", Command: []string{"/usr/bin/true"}, Network: compiler.Network{Mode: "none"},
		Runtime: compiler.Runtime{Name: "system", ReadOnly: []string{"/usr"}}}
	for _, abi := range []int{0, 2} {
		_, err := launch.Run(p, compiler.Machine{}, launch.Options{Host: &landlock.Host{ABI: abi, UserNS: true}})
		var ue *launch.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "refusing to start unconfined") {
			t.Errorf("ABI %d: got %v, want an UnsupportedError", abi, err)
		}
	}
	_, err := launch.Run(p, compiler.Machine{}, launch.Options{Host: &landlock.Host{ABI: 7, UserNS: false}})
	if err == nil || !strings.Contains(err.Error(), "landlock-tcp-only") {
		t.Errorf("no user namespaces: got %v, want a refusal naming landlock-tcp-only", err)
	}
}
