package bwrap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
)

func plan() *compiler.Plan {
	root := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}
	return &compiler.Plan{
		Server: "s", Command: []string{"/usr/bin/server", "--stdio"}, Workdir: "/w",
		User:      compiler.User{UID: 1000, GID: 1000},
		Network:   compiler.Network{Mode: "none"},
		Runtime:   compiler.Runtime{Name: "system", ReadOnly: []string{"/usr", "/etc/ld.so.cache"}},
		Mounts:    []compiler.Mount{{Source: root, Target: "/w", Mode: compiler.ReadWrite}},
		Protected: []compiler.Protected{{Source: root.Join(".git/config"), Target: "/w/.git/config", Name: ".git/config"}},
		Scratch:   &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20},
		Env:       []compiler.EnvGrant{{Name: "TOKEN"}},
		Hash:      "sha256:00",
	}
}

func TestArgsOrder(t *testing.T) {
	a, err := Args(plan(), compiler.Placeholders{}, Merged, 0)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s ...string) int {
		for i := range a {
			if slices.Equal(a[i:min(i+len(s), len(a))], s) {
				return i
			}
		}
		t.Fatalf("%q not in %q", s, a)
		return -1
	}
	steps := []int{
		at("--unshare-all"), at("--clearenv"), at("--proc", "/proc"),
		at("--ro-bind", "/usr", "/usr"), at("--symlink", "usr/lib", "/lib"),
		at("--size", "1048576", "--tmpfs", "/tmp"), at("--bind", "${PROJECT_ROOT}", "/w"),
		at("--ro-bind", "${PROJECT_ROOT}/.git/config", "/w/.git/config"),
		at("--remount-ro", "/"), at("--chdir", "/w"), at("--", "/usr/bin/server", "--stdio"),
	}
	if !slices.IsSorted(steps) {
		t.Errorf("out of order (%v):\n%q", steps, a)
	}
	for i := range a[:len(a)-1] {
		if (a[i] == "--bind" || a[i] == "--ro-bind") && a[i+1] == "/" {
			t.Errorf("binds the host's root: %q", a)
		}
	}
	if slices.Contains(a, "--share-net") || slices.Contains(a, "TOKEN") {
		t.Errorf("args share the network or carry an env name without the wrapper: %q", a)
	}
}

func TestNonMergedUsr(t *testing.T) {
	a, _ := Args(plan(), compiler.Placeholders{}, Layout{MergedUsr: false}, 0)
	line := strings.Join(a, " ")
	if strings.Contains(line, "--symlink") || !strings.Contains(line, "--ro-bind-try /lib64 /lib64") {
		t.Errorf("non-merged layout: %s", line)
	}
}

// TestWrapperRunsUnderSh runs the wrapper with a stand-in bwrap that records
// its argv, what arrived on --args' descriptor, and its stdin: paths with
// shell metacharacters arrive intact, env values never appear in argv, and
// stdin still reaches the server.
func TestWrapperRunsUnderSh(t *testing.T) {
	closeInherited(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	fake := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$OUT/argv"
cat <&4 > "$OUT/fd4"
cat > "$OUT/stdin"
`
	os.WriteFile(filepath.Join(bin, "bwrap"), []byte(fake), 0o755)
	script, err := Wrapper(plan(), "../..")
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "s.sh")
	os.WriteFile(wrapper, script, 0o755)

	root := filepath.Join(dir, `my "proj" $HOME 'x'`)
	secret := `a b"c$d'e`
	cmd := exec.Command("/bin/sh", wrapper)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "OUT=" + dir, "PROJECT_ROOT=" + root, "TOKEN=" + secret, "HOME=/h"}
	cmd.Stdin = strings.NewReader("{\"jsonrpc\":\"2.0\"}\n")
	asOrdinaryUser(t, cmd, dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wrapper: %v\n%s\n%s", err, out, script)
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "argv"))
	fd4, _ := os.ReadFile(filepath.Join(dir, "fd4"))
	stdin, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if !strings.Contains(string(argv), "--bind\n"+root+"\n/w\n") || !strings.Contains(string(argv), root+"/.git/config\n") {
		t.Errorf("project path did not arrive intact:\n%s", argv)
	}
	if strings.Contains(string(argv), secret) {
		t.Errorf("an env value is in argv:\n%s", argv)
	}
	if string(fd4) != "--setenv\x00TOKEN\x00"+secret+"\x00" {
		t.Errorf("--args fd carried %q", fd4)
	}
	if string(stdin) != "{\"jsonrpc\":\"2.0\"}\n" {
		t.Errorf("stdin did not reach bwrap: %q", stdin)
	}
}

// TestWrapperClosesInheritedDescriptors: a descriptor above 2 the caller
// left open (a file of the home, a folder, the script itself, writable: a
// red team rewrote it through one) must not reach bwrap, which
// hands every descriptor it inherits to the server; the script's own, and
// --args' pipe, still do their jobs. One above 9, which dash cannot name,
// is closed or refuses the start (126), never passed on. Run under every
// shell here that a user's sh may be.
func TestWrapperClosesInheritedDescriptors(t *testing.T) {
	closeInherited(t)
	shells := []string{"/bin/sh"}
	for _, sh := range []string{"bash", "dash", "busybox"} {
		if p, err := exec.LookPath(sh); err == nil {
			shells = append(shells, p)
		}
	}
	for _, sh := range shells {
		for _, c := range []struct{ env, high bool }{{false, false}, {true, false}, {true, true}} {
			env, high := c.env, c.high
			t.Run(fmt.Sprintf("%s/env=%v/fd12=%v", filepath.Base(sh), env, high), func(t *testing.T) {
				dir := t.TempDir()
				bin := filepath.Join(dir, "bin")
				os.MkdirAll(bin, 0o755)
				fake := `#!/bin/sh
for f in /proc/$$/fd/*; do printf '%s %s\n' "${f##*/}" "$(readlink "$f")"; done > "$OUT/fds"
cat > /dev/null
`
				os.WriteFile(filepath.Join(bin, "bwrap"), []byte(fake), 0o755)
				p := plan()
				if !env {
					p.Env = nil
				}
				script, err := Wrapper(p, "../..")
				if err != nil {
					t.Fatal(err)
				}
				wrapper := filepath.Join(dir, "s.sh")
				os.WriteFile(wrapper, script, 0o755)
				secret := filepath.Join(dir, "credentials")
				os.WriteFile(secret, []byte("key"), 0o600)
				f, err := os.Open(secret)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				d, err := os.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				args := []string{wrapper}
				if filepath.Base(sh) == "busybox" {
					args = []string{"sh", wrapper}
				}
				cmd := exec.Command(sh, args...)
				cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "OUT=" + dir, "PROJECT_ROOT=" + dir, "TOKEN=t", "HOME=/h"}
				cmd.Stdin = strings.NewReader("{}\n")
				self, err := os.OpenFile(wrapper, os.O_RDWR, 0) // the script itself, writable
				if err != nil {
					t.Fatal(err)
				}
				defer self.Close()
				extra := []*os.File{f, nil, self, nil, d} // fds 3, 5 and 7
				if high {
					extra = append(extra, make([]*os.File, 4)...)
					extra = append(extra, f) // fd 12: dash cannot name it
				}
				cmd.ExtraFiles = extra
				asOrdinaryUser(t, cmd, dir)
				out, err := cmd.CombinedOutput()
				fds, _ := os.ReadFile(filepath.Join(dir, "fds"))
				if high && cmd.ProcessState.ExitCode() == 126 {
					if len(fds) > 0 || !strings.Contains(string(out), "descriptor 12 is open") {
						t.Errorf("refused, but bwrap ran or the message does not say why:\n%s", out)
					}
					return
				}
				if err != nil {
					t.Fatalf("wrapper: %v\n%s", err, out)
				}
				if strings.Contains(string(fds), secret) || strings.Contains(string(fds), " "+dir+"\n") || strings.Contains(string(fds), wrapper) {
					t.Errorf("an inherited descriptor reached bwrap:\n%s", fds)
				}
				if !strings.Contains(string(fds), "0 pipe:") {
					t.Errorf("stdin is not the caller's pipe:\n%s", fds)
				}
			})
		}
	}
}

// closeInherited marks close-on-exec the descriptors above 2 this test
// process inherited (a CI runner's, a terminal multiplexer's): the wrapper
// refuses to start with one dash cannot close, and the tests hand it the
// ones they mean to.
func closeInherited(t *testing.T) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}

// asOrdinaryUser runs cmd as uid 1000 when the test is root, as the
// wrapper refuses root (TestWrapperRefusesRoot); dir, and the folders
// above it up to the temporary root, become reachable and dir writable.
func asOrdinaryUser(t *testing.T, cmd *exec.Cmd, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o777)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}}
}

// TestWrapperRefusesRoot: run by root, bwrap would map the plan's user
// to root on the host; the wrapper refuses before it starts bwrap, and a
// plan that says root itself (user: "0:0") is not refused.
func TestWrapperRefusesRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true, so not skipping: the refusal needs the test to run as root")
		}
		t.Skip("the refusal needs the test to run as root")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "bwrap"), []byte("#!/bin/sh\n: > \"$OUT/ran\"\ncat >/dev/null\n"), 0o755)
	for _, root := range []bool{false, true} {
		p := plan()
		if root {
			p.User = compiler.User{UID: 0, GID: 0}
		}
		script, err := Wrapper(p, "../..")
		if err != nil {
			t.Fatal(err)
		}
		wrapper := filepath.Join(dir, "s.sh")
		os.WriteFile(wrapper, script, 0o755)
		os.Remove(filepath.Join(dir, "ran"))
		cmd := exec.Command("/bin/sh", wrapper)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "OUT=" + dir, "PROJECT_ROOT=" + dir, "TOKEN=t", "HOME=/h"}
		cmd.Stdin = strings.NewReader("{}\n")
		out, err := cmd.CombinedOutput()
		_, ran := os.Stat(filepath.Join(dir, "ran"))
		switch {
		case !root && (err == nil || ran == nil || !strings.Contains(string(out), "the host's root")):
			t.Errorf("user %s, run by root: %v, bwrap ran: %v\n%s", p.User, err, ran == nil, out)
		case root && (err != nil || ran != nil):
			t.Errorf("user 0:0, run by root: %v, bwrap ran: %v\n%s", err, ran == nil, out)
		}
	}
}
