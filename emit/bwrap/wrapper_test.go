//go:build linux

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
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
)

// writeBuilt writes p's spec and wrapper where build writes them, below
// root, and returns the wrapper's path.
func writeBuilt(t *testing.T, root string, p *compiler.Plan) string {
	t.Helper()
	dir := filepath.Join(root, ".mcpolicy", Backend)
	must(t, os.MkdirAll(dir, 0o755))
	files, err := Bwrap.Artefacts(p, ".mcpolicy")
	must(t, err)
	for _, f := range files {
		must(t, os.WriteFile(filepath.Join(root, ".mcpolicy", f.Name), f.Data, 0o644))
	}
	return filepath.Join(dir, p.Server+".sh")
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(body), 0o755))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// entryArgs is the launcher's argv in p's client entry for a project at
// root, with bwrap at bwrap.
func entryArgs(t *testing.T, p *compiler.Plan, root, bwrap string) []string {
	t.Helper()
	cmd, err := Bwrap.Entry(p, emit.EntryEnv{Root: root, Out: filepath.Join(root, ".mcpolicy"),
		Show:     func(file string) string { return file },
		Launcher: func() (string, error) { return "/opt/bin/mcpolicy-launch", nil },
		Pin:      func(_ string, want []byte) (string, error) { return artefact.Digest(want), nil },
		Abs:      func(program string) string { return bwrap }})
	must(t, err)
	return slices.Clone(cmd.Args)
}

// TestWrapperStartsAsTheEntry: the by-hand wrapper execs mcpolicy-launch
// with the client entry's arguments (the project root from the script's
// folder, the spec's digest, the spec), passes the environment and stdin
// on unchanged (the launcher puts the granted values on bwrap's --args
// memfd), passes on only -v and --env-file, and says how to install a
// missing launcher. A plan with an egress allowlist starts as its entry
// does: mcpolicy run, pinned to the plan.
func TestWrapperStartsAsTheEntry(t *testing.T) {
	dir := t.TempDir()
	bin, other := filepath.Join(dir, "bin"), filepath.Join(dir, "other")
	fake := `#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done > "$OUT/argv"
printf '%s' "${TOKEN-unset}" > "$OUT/token"
cat > "$OUT/stdin"
`
	writeScript(t, filepath.Join(bin, "mcpolicy-launch"), fake)
	writeScript(t, filepath.Join(bin, "mcpolicy"), fake)
	writeScript(t, filepath.Join(bin, "bwrap"), "#!/bin/sh\nexit 9\n")
	writeScript(t, filepath.Join(other, "launcher"), strings.Replace(fake, "argv", "other-argv", 1))
	root := filepath.Join(dir, `my "proj" $HOME 'x'`)
	secret := `a b"c$d'e`

	run := func(t *testing.T, p *compiler.Plan, path string, env []string, args ...string) (string, int) {
		t.Helper()
		for _, f := range []string{"argv", "other-argv", "token", "stdin"} {
			os.Remove(filepath.Join(dir, f))
		}
		wrapper := writeBuilt(t, root, p)
		cmd := exec.Command("/bin/sh", append([]string{wrapper}, args...)...)
		cmd.Env = append([]string{"PATH=" + path, "OUT=" + dir, "TOKEN=" + secret, "HOME=/h"}, env...)
		cmd.Dir = root // cwd the project, as a developer runs it
		cmd.Stdin = strings.NewReader("{\"jsonrpc\":\"2.0\"}\n")
		out, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatal(err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	lines := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	withBin := bin + ":/usr/bin:/bin"

	t.Run("the entry's launch", func(t *testing.T) {
		p := plan()
		out, code := run(t, p, withBin, nil)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		if got, want := lines("argv"), entryArgs(t, p, root, filepath.Join(bin, "bwrap")); !slices.Equal(got, want) {
			t.Errorf("the wrapper ran mcpolicy-launch %q\nthe client entry runs it with %q", got, want)
		}
		if tok, _ := os.ReadFile(filepath.Join(dir, "token")); string(tok) != secret {
			t.Errorf("the launcher got TOKEN %q, want it unchanged", tok)
		}
		if in, _ := os.ReadFile(filepath.Join(dir, "stdin")); string(in) != "{\"jsonrpc\":\"2.0\"}\n" {
			t.Errorf("stdin did not reach the launcher: %q", in)
		}
	})
	t.Run("passed on", func(t *testing.T) {
		p := plan()
		out, code := run(t, p, withBin, nil, "-v", "--env-file", "/e 1", "--env-file=/e2")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		want := append([]string{"-v", "--env-file", "/e 1", "--env-file=/e2"}, entryArgs(t, p, root, filepath.Join(bin, "bwrap"))...)
		if got := lines("argv"); !slices.Equal(got, want) {
			t.Errorf("argv %q, want %q", got, want)
		}
	})
	t.Run("MCPOLICY_LAUNCH", func(t *testing.T) {
		p := plan()
		out, code := run(t, p, "/usr/bin:/bin", []string{"MCPOLICY_LAUNCH=" + filepath.Join(other, "launcher"), "MCPOLICY_BWRAP=" + filepath.Join(bin, "bwrap")})
		if code != 0 || !slices.Equal(lines("other-argv"), entryArgs(t, p, root, filepath.Join(bin, "bwrap"))) {
			t.Errorf("exit %d, argv %q\n%s", code, lines("other-argv"), out)
		}
	})
	for _, args := range [][]string{
		{"--sha256", strings.Repeat("0", 64)}, {"--bwrap", "/bin/true"}, {"--project-root", "/"},
		{"--engine", "docker"}, {"--unprotect", ".git"}, {"other.json"}, {"--env-file"}, {"-v", "--", "x"},
	} {
		t.Run("refused "+strings.Join(args, " "), func(t *testing.T) {
			out, code := run(t, plan(), withBin, nil, args...)
			if code != 2 || lines("argv") != nil || !strings.Contains(out, "only -v and --env-file") && !strings.Contains(out, "needs a value") {
				t.Errorf("exit %d, launcher ran with %q; want exit 2, nothing run, and why\n%s", code, lines("argv"), out)
			}
		})
	}
	t.Run("no launcher", func(t *testing.T) {
		out, code := run(t, plan(), "/usr/bin:/bin", nil)
		if code != 127 || !strings.Contains(out, "go install ./cmd/...") || !strings.Contains(out, "MCPOLICY_LAUNCH") {
			t.Errorf("exit %d; want 127 and how to install it\n%s", code, out)
		}
	})
	t.Run("allowlist", func(t *testing.T) {
		p := plan()
		p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24290}
		out, code := run(t, p, withBin, nil, "--env-file", "/e")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, out)
		}
		// As clientcfg writes the entry of a plan with an allowlist: the
		// plan build wrote, pinned, and no policy read at the start.
		got := lines("argv")
		e, ok, err := artefact.ParseRunEntry(got)
		want := artefact.RunEntry{Backend: Backend, ProjectRoot: root, Digest: artefact.Digest(p.JSON()),
			PlanFile: filepath.Join(root, ".mcpolicy", "plan", p.Server+".json"), EnvFile: "/e"}
		if e.PlanFile = filepath.Clean(e.PlanFile); !ok || err != nil || e != want {
			t.Errorf("argv %q (%v), want the entry %+v", got, err, want)
		}
		if out, code := run(t, p, withBin, nil, "-v"); code != 2 {
			t.Errorf("-v for mcpolicy run: exit %d, want 2\n%s", code, out)
		}
	})
}

const recorder = "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$OUT/argv\"\n"

// runIn runs p's wrapper, built below root, from root with env (OUT=dir
// for recorder) and returns its output, its exit code and the argv a
// recorder got (nil when none ran).
func runIn(t *testing.T, dir, root string, p *compiler.Plan, env ...string) (string, int, []string) {
	t.Helper()
	os.Remove(filepath.Join(dir, "argv"))
	wrapper := writeBuilt(t, root, p)
	cmd := exec.Command("/bin/sh", wrapper)
	cmd.Env = append([]string{"OUT=" + dir}, env...)
	cmd.Dir = root
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "argv"))
	if err != nil {
		return string(out), cmd.ProcessState.ExitCode(), nil
	}
	return string(out), cmd.ProcessState.ExitCode(), strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestWrapperLauncherFromProject: the client entry names mcpolicy-launch
// and bwrap by absolute path; the wrapper finds them on PATH. A PATH with
// the project's .venv/bin (an activated venv, direnv's PATH_add), ".",
// or a folder a read-write grant holds would run what the server planted
// there, unconfined: the wrapper refuses (exit 126, and why) a program
// that, its links followed, the project or a read-write grant holds, or
// that is not named by an absolute path; it passes bwrap as --bwrap.
func TestWrapperLauncherFromProject(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "proj")
	home := filepath.Join(dir, "home")
	bin := filepath.Join(dir, "bin")
	venv := filepath.Join(root, ".venv", "bin")
	writeScript(t, filepath.Join(bin, "mcpolicy-launch"), recorder)
	writeScript(t, filepath.Join(bin, "mcpolicy"), recorder)
	writeScript(t, filepath.Join(bin, "bwrap"), "#!/bin/sh\nexit 9\n")
	for _, name := range []string{"mcpolicy-launch", "mcpolicy", "bwrap"} {
		writeScript(t, filepath.Join(venv, name), recorder+"echo planted > \"$OUT/planted\"\n")
		writeScript(t, filepath.Join(home, ".local", "bin", name), recorder+"echo planted > \"$OUT/planted\"\n")
		writeScript(t, filepath.Join(dir, "abs", name), recorder+"echo planted > \"$OUT/planted\"\n")
		writeScript(t, filepath.Join(root, name), recorder+"echo planted > \"$OUT/planted\"\n")
	}
	writeScript(t, filepath.Join(root, "tools", "bwrap"), "#!/bin/sh\necho planted > \"$OUT/planted\"\n")
	must(t, os.MkdirAll(filepath.Join(dir, "links"), 0o755))
	must(t, os.Symlink(venv, filepath.Join(dir, "links", "venv")))                                              // a folder on PATH that is the project's
	must(t, os.Symlink(filepath.Join(venv, "mcpolicy-launch"), filepath.Join(dir, "links", "mcpolicy-launch"))) // a file that is
	must(t, os.MkdirAll(filepath.Join(dir, "ok"), 0o755))
	must(t, os.Symlink(filepath.Join(bin, "mcpolicy-launch"), filepath.Join(dir, "ok", "mcpolicy-launch"))) // a link to a launcher outside
	must(t, os.Symlink(home, filepath.Join(dir, "homelink")))
	granting := func() *compiler.Plan {
		p := plan()
		p.Mounts = append(p.Mounts,
			compiler.Mount{Source: compiler.HostPath{Base: compiler.Home, Rel: ".local"}, Target: "/l", Mode: compiler.ReadWrite},
			compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: filepath.Join(dir, "abs")}, Target: "/a", Mode: compiler.ReadWrite},
			compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: bin}, Target: "/b", Mode: compiler.ReadOnly})
		return p
	}
	allowlist := func() *compiler.Plan {
		p := plan()
		p.Network = compiler.Network{Mode: "allowlist", ProxyPort: 24290}
		return p
	}
	// Another server of the policy may write ~/.local and abs/: this one
	// grants neither.
	others := func(p *compiler.Plan) *compiler.Plan {
		p.OthersWritable = []compiler.HostPath{{Base: compiler.Absolute, Rel: filepath.Join(dir, "abs")}, {Base: compiler.Home, Rel: ".local"}}
		return p
	}
	sys := ":/usr/bin:/bin"
	for _, c := range []struct {
		name string
		p    *compiler.Plan
		env  []string
		why  string
	}{
		{"the project's venv first on PATH", plan(), []string{"PATH=" + venv + ":" + bin + sys}, "inside the project"},
		{"bwrap from the project", plan(), []string{"PATH=" + filepath.Join(root, "tools") + ":" + bin + sys}, "bwrap is " + filepath.Join(root, "tools", "bwrap")},
		{"mcpolicy from the project's venv", allowlist(), []string{"PATH=" + venv + ":" + bin + sys}, "mcpolicy is " + filepath.Join(venv, "mcpolicy")},
		{"a folder on PATH linked to the project's", plan(), []string{"PATH=" + filepath.Join(dir, "links", "venv") + ":" + bin + sys}, "inside the project"},
		{"a link on PATH to the project's", plan(), []string{"PATH=" + filepath.Join(dir, "links") + ":" + bin + sys}, filepath.Join(venv, "mcpolicy-launch")},
		{"a read-write grant of the home", granting(), []string{"HOME=" + home, "PATH=" + filepath.Join(home, ".local", "bin") + ":" + bin + sys}, "a folder its server may write"},
		{"a read-write grant of the home, HOME a link", granting(), []string{"HOME=" + filepath.Join(dir, "homelink"), "PATH=" + filepath.Join(home, ".local", "bin") + ":" + bin + sys}, "a folder its server may write"},
		{"an absolute read-write grant", granting(), []string{"HOME=" + home, "PATH=" + filepath.Join(dir, "abs") + ":" + bin + sys}, "a folder its server may write"},
		{"another server's read-write grant on PATH", others(plan()), []string{"HOME=" + home, "PATH=" + filepath.Join(home, ".local", "bin") + ":" + bin + sys}, filepath.Join(home, ".local", "bin", "mcpolicy-launch")},
		{"MCPOLICY_LAUNCH in another server's grant", others(plan()), []string{"HOME=" + home, "PATH=" + bin + sys, "MCPOLICY_LAUNCH=" + filepath.Join(dir, "abs", "mcpolicy-launch")}, "a folder its server may write"},
		{"MCPOLICY_BWRAP in another server's grant", others(plan()), []string{"HOME=" + home, "PATH=" + bin + sys, "MCPOLICY_BWRAP=" + filepath.Join(dir, "abs", "bwrap")}, "bwrap is " + filepath.Join(dir, "abs", "bwrap")},
		{"MCPOLICY in another server's grant", others(allowlist()), []string{"HOME=" + home, "PATH=" + bin + sys, "MCPOLICY=" + filepath.Join(dir, "abs", "mcpolicy")}, "mcpolicy is " + filepath.Join(dir, "abs", "mcpolicy")},
		{"MCPOLICY_LAUNCH in the project", plan(), []string{"PATH=" + bin + sys, "MCPOLICY_LAUNCH=" + filepath.Join(venv, "mcpolicy-launch")}, "inside the project"},
		{"MCPOLICY_BWRAP in the project", plan(), []string{"PATH=" + bin + sys, "MCPOLICY_BWRAP=" + filepath.Join(venv, "bwrap")}, "inside the project"},
		{"MCPOLICY_LAUNCH relative", plan(), []string{"PATH=" + bin + sys, "MCPOLICY_LAUNCH=mcpolicy-launch"}, "not an absolute path"},
		{". on PATH", plan(), []string{"PATH=.:" + bin + sys}, "not an absolute path"},
		{"an empty PATH entry", plan(), []string{"PATH=:" + bin + sys}, "not an absolute path"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, "planted"))
			out, code, argv := runIn(t, dir, root, c.p, append([]string{"HOME=/h"}, c.env...)...)
			if _, err := os.Stat(filepath.Join(dir, "planted")); err == nil || argv != nil {
				t.Fatalf("a program the server could have written ran (argv %q)\n%s", argv, out)
			}
			if code != 126 || !strings.Contains(out, c.why) || !strings.Contains(out, "absolute path") {
				t.Errorf("exit %d; want 126, %q and the way out\n%s", code, c.why, out)
			}
		})
	}
	t.Run("outside, through a link", func(t *testing.T) {
		p := granting()
		out, code, argv := runIn(t, dir, root, p, "HOME="+home, "PATH="+filepath.Join(dir, "ok")+":"+bin+sys)
		if code != 0 || !slices.Equal(argv, entryArgs(t, p, root, filepath.Join(bin, "bwrap"))) {
			t.Errorf("exit %d, argv %q\n%s", code, argv, out)
		}
	})
}

// TestWrapperRootTrailingNewline: $(pwd -P) drops every trailing newline,
// so a project folder whose name ends in one was launched with the root
// of its sibling without it (which someone else may have made).
func TestWrapperRootTrailingNewline(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "proj\n")
	must(t, os.MkdirAll(filepath.Join(dir, "proj"), 0o755)) // the sibling
	writeScript(t, filepath.Join(dir, "bin", "mcpolicy-launch"), recorder)
	writeScript(t, filepath.Join(dir, "bin", "bwrap"), "#!/bin/sh\nexit 9\n")
	out, code, argv := runIn(t, dir, root, plan(), "PATH="+filepath.Join(dir, "bin")+":/usr/bin:/bin", "HOME=/h")
	got := strings.Join(argv, "\n")
	if code != 0 || !strings.Contains(got, "--project-root\n"+root+"\n") || !strings.Contains(got, "\n"+root+"/.mcpolicy/bwrap/s.json") {
		t.Errorf("project %q: exit %d, launched with the arguments:\n%s\n%s", root, code, got, out)
	}
}

// TestWrapperThroughLauncher runs the wrapper with the real mcpolicy-launch
// and a stand-in bwrap that records what it got, as a developer runs it:
// descriptors the caller left open (a file of the home, a folder, the
// script itself, writable; one above 9, which dash cannot name) never
// reach bwrap; a terminal as stdin, stdout and stderr is relayed (bwrap
// holds none, and an escape sequence reaches the terminal spelt out);
// run by root, bwrap runs as the plan's user. The wrapper before the
// launcher did the first itself, refused a terminal, and refused root.
func TestWrapperThroughLauncher(t *testing.T) {
	dir := t.TempDir()
	for d := dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()) && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o777) // the plan's user (1000) reaches the project and the stand-ins
	}
	bin, out, root := filepath.Join(dir, "bin"), filepath.Join(dir, "out"), filepath.Join(dir, "proj")
	must(t, os.MkdirAll(bin, 0o755))
	must(t, os.MkdirAll(out, 0o777))
	must(t, os.MkdirAll(root, 0o777))
	must(t, os.Chmod(out, 0o777))
	testbin.Install(t, testbin.Build(t, testbin.LaunchPkg), filepath.Join(bin, "mcpolicy-launch"))
	writeScript(t, filepath.Join(bin, "bwrap"), fmt.Sprintf(`#!/bin/sh
PATH=/usr/bin:/bin
out=%s
for f in /proc/$$/fd/*; do printf '%%s %%s\n' "${f##*/}" "$(readlink "$f")"; done > "$out/fds"
for fd in 0 1 2; do if [ -t "$fd" ]; then echo "$fd terminal"; fi; done > "$out/ttys"
id -u > "$out/uid"
printf 'osc \033]52;c;cHduZWQ=\007 end\n' >&2
`, shellQuoted(t, out)))
	env := []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=/h", "TOKEN=t"}
	result := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(out, name))
		return string(b)
	}
	clean := func() {
		for _, f := range []string{"fds", "ttys", "uid"} {
			os.Remove(filepath.Join(out, f))
		}
	}
	asUser := func(cmd *exec.Cmd) {
		if os.Geteuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 1000, Gid: 1000, Groups: []uint32{}}}
		}
	}

	shells := []string{"/bin/sh"}
	for _, sh := range []string{"bash", "dash", "busybox"} {
		if p, err := exec.LookPath(sh); err == nil {
			shells = append(shells, p)
		}
	}
	for _, sh := range shells {
		t.Run("descriptors/"+filepath.Base(sh), func(t *testing.T) {
			clean()
			wrapper := writeBuilt(t, root, plan())
			secret := filepath.Join(dir, "credentials")
			must(t, os.WriteFile(secret, []byte("key"), 0o600))
			f, err := os.Open(secret)
			must(t, err)
			defer f.Close()
			d, err := os.Open(dir)
			must(t, err)
			defer d.Close()
			self, err := os.OpenFile(wrapper, os.O_RDWR, 0) // the script itself, writable
			must(t, err)
			defer self.Close()
			args := []string{wrapper}
			if filepath.Base(sh) == "busybox" {
				args = []string{"sh", wrapper}
			}
			cmd := exec.Command(sh, args...)
			cmd.Env, cmd.Dir = env, root
			cmd.Stdin = strings.NewReader("{}\n")
			cmd.ExtraFiles = []*os.File{f, nil, self, nil, d, nil, nil, nil, nil, f} // 3, 5, 7 and 12
			asUser(cmd)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("wrapper: %v\n%s", err, b)
			}
			fds := result("fds")
			if fds == "" {
				t.Fatalf("bwrap did not run\n%s", b)
			}
			if strings.Contains(fds, secret) || strings.Contains(fds, " "+dir+"\n") || strings.Contains(fds, wrapper) {
				t.Errorf("an inherited descriptor reached bwrap:\n%s", fds)
			}
			if !strings.Contains(fds, "0 pipe:") {
				t.Errorf("stdin is not the caller's pipe:\n%s", fds)
			}
		})
	}
	t.Run("terminal", func(t *testing.T) {
		clean()
		wrapper := writeBuilt(t, root, plan())
		master, slave := openPTY(t)
		cmd := exec.Command("/bin/sh", wrapper)
		cmd.Env, cmd.Dir = env, root
		cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
		asUser(cmd)
		err := cmd.Run()
		tty := readFor(master, 500*time.Millisecond)
		if err != nil {
			t.Fatalf("wrapper: %v\n%s", err, tty)
		}
		if result("uid") == "" {
			t.Fatalf("bwrap did not run\n%s", tty)
		}
		if ttys := result("ttys"); ttys != "" {
			t.Errorf("bwrap holds the terminal:\n%s", ttys)
		}
		if strings.Contains(tty, "\x1b]52") || !strings.Contains(tty, `\x1b]52;c;cHduZWQ=\x07`) {
			t.Errorf("the escape sequence reached the terminal raw, or not at all: %q", tty)
		}
	})
	t.Run("run by root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true, so not skipping: this needs the test to run as root")
			}
			t.Skip("needs the test to run as root")
		}
		for _, u := range []compiler.User{{UID: 1000, GID: 1000}, {UID: 0, GID: 0}} {
			clean()
			p := plan()
			p.User = u
			wrapper := writeBuilt(t, root, p)
			cmd := exec.Command("/bin/sh", wrapper)
			cmd.Env, cmd.Dir = env, root
			cmd.Stdin = strings.NewReader("{}\n")
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("user %s: %v\n%s", u, err, b)
			}
			if got := strings.TrimSpace(result("uid")); got != strconv.Itoa(u.UID) {
				t.Errorf("user %s, run by root: bwrap ran as uid %q, want %d\n%s", u, got, u.UID, b)
			}
		}
	})
}

func shellQuoted(t *testing.T, s string) string {
	t.Helper()
	q, err := quote(s)
	must(t, err)
	return q
}

func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	must(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	must(t, err)
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// readFor reads f until nothing has come for d.
func readFor(f *os.File, d time.Duration) string {
	fd := int(f.Fd())
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
		if n <= 0 || err != nil {
			return b.String()
		}
		if n, err = unix.Read(fd, buf); n <= 0 || err != nil {
			return b.String()
		}
		b.Write(buf[:n])
	}
}
