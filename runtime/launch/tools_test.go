//go:build linux

package launch_test

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// toolSurface writes root/.mcpolicy/tools/SERVER.json as build would and
// returns its digest.
func toolSurface(t *testing.T, root, server string) string {
	t.Helper()
	p := toolpolicy.Policy{Server: server, PolicyFile: "mcpolicy.cue", OnPinChange: "hide",
		Allow: []toolpolicy.Rule{{Pattern: "read_*", Field: "servers." + server + ".tools.allow[0]"}}}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	write(t, filepath.Join(root, ".mcpolicy", artefact.ToolsPath(server)), string(b))
	return artefact.Digest(b)
}

// TestReadTools: the tool surface is used only as the artefact pins it;
// anything else refuses the launch (a TamperError, exit 8) with the fix.
func TestReadTools(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, root, file string) // after the digest was taken
		digest func(d string) string
		want   string // in the error; "" for success
	}{
		{name: "as built", want: ""},
		{name: "changed", change: func(t *testing.T, root, file string) { appendTo(t, file, " ") }, want: "has changed since the artefact was built"},
		{name: "missing", change: func(t *testing.T, root, file string) { os.Remove(file) }, want: "is missing"},
		{name: "a symlink", change: func(t *testing.T, root, file string) {
			other := filepath.Join(root, "other.json")
			os.Rename(file, other)
			os.Symlink(other, file)
		}, want: "symlink"},
		{name: "a symlinked folder", change: func(t *testing.T, root, file string) {
			dir := filepath.Dir(file)
			os.Rename(dir, filepath.Join(root, "elsewhere"))
			os.Symlink(filepath.Join(root, "elsewhere"), dir)
		}, want: "symlink"},
		{name: "a FIFO", change: func(t *testing.T, root, file string) {
			os.Remove(file)
			syscall.Mkfifo(file, 0o644)
		}, want: "not a regular file"},
		{name: "not a digest", digest: func(string) string { return "sha256:xyz" }, want: "not sha256:HEX"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			d := toolSurface(t, root, "s")
			if c.change != nil {
				c.change(t, root, filepath.Join(root, ".mcpolicy", artefact.ToolsPath("s")))
			}
			if c.digest != nil {
				d = c.digest(d)
			}
			p, err := launch.ReadTools(root, "s", d)
			if c.want == "" {
				if err != nil || p == nil || p.Server != "s" || len(p.Allow) != 1 {
					t.Fatalf("ReadTools = %+v, %v", p, err)
				}
				return
			}
			var te *launch.TamperError
			if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) || !strings.Contains(launch.RefusalFix(err), "mcpolicy build") {
				t.Fatalf("ReadTools: %v (fix %q), want a TamperError saying %q with the fix `mcpolicy build`", err, launch.RefusalFix(err), c.want)
			}
		})
	}
	t.Run("another server's", func(t *testing.T) {
		root := t.TempDir()
		d := toolSurface(t, root, "other")
		os.Rename(filepath.Join(root, ".mcpolicy", artefact.ToolsPath("other")), filepath.Join(root, ".mcpolicy", artefact.ToolsPath("s")))
		if _, err := launch.ReadTools(root, "s", d); err == nil || !strings.Contains(err.Error(), `server "other"`) {
			t.Fatalf("another server's surface: %v", err)
		}
	})
	t.Run("a field this launcher does not know", func(t *testing.T) {
		root := t.TempDir()
		b := []byte(`{"server":"s","allow":[],"onPinChange":"hide","rateLimit":1}`)
		write(t, filepath.Join(root, ".mcpolicy", artefact.ToolsPath("s")), string(b))
		if _, err := launch.ReadTools(root, "s", artefact.Digest(b)); err == nil || !strings.Contains(err.Error(), "rateLimit") {
			t.Fatalf("an unknown field: %v", err)
		}
	})
}

func appendTo(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

// TestStartRefusesUnrelayedTools: a ruleset that pins a tool surface does
// not start without the surface to relay, nor without namespaces, where
// the launcher would become the server and nothing would relay.
func TestStartRefusesUnrelayedTools(t *testing.T) {
	rs := &artefact.Ruleset{Server: "s", Command: []string{"/usr/bin/true"}, Network: "none", User: "1000:1000",
		Accept: []string{artefact.AcceptTCPOnly}, Tools: "sha256:" + strings.Repeat("0", 64)}
	_, err := launch.Start(rs, launch.Options{Host: &hostcaps.Host{ABI: 7, UserNS: true}})
	var te *launch.TamperError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "given none to relay") {
		t.Errorf("a pinned surface, none given: %v", err)
	}
	_, err = launch.Start(rs, launch.Options{Host: &hostcaps.Host{ABI: 7}, Tools: &toolpolicy.Policy{Server: "s"}})
	var ue *launch.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "nothing to relay") {
		t.Errorf("no namespaces: %v", err)
	}
}

// relayProbe is a server that says, as a JSON-RPC notification, what its
// stdin and stdout are: the launcher's own pipes (passed through) or the
// relay's.
const relayProbe = `printf '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s %s"}}\n' "$(readlink /proc/self/fd/0)" "$(readlink /proc/self/fd/1)"`

// TestLauncherRelaysTools starts a bwrap artefact through the real
// launcher: with a tool surface pinned, the server's stdin and stdout are
// the relay's pipes, not the client's; without one (the weakened wiring
// the test must tell apart), the client's own. A changed or missing
// surface refuses the launch (exit 8) with a launch-log line naming
// `mcpolicy build`.
func TestLauncherRelaysTools(t *testing.T) {
	kernelTest(t)
	if why := testenv.Bwrap(artefact.BwrapProgram); why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	launcher := testbin.Launch(t)
	for _, c := range []struct {
		name    string
		tools   bool
		tamper  func(root string)
		relayed bool
		exit    int
	}{
		{name: "tools pinned", tools: true, relayed: true},
		{name: "no tools section (control)", tools: false, relayed: false},
		{name: "tools changed", tools: true, tamper: func(root string) { appendTo(t, filepath.Join(root, ".mcpolicy", artefact.ToolsPath("s")), "\n") }, exit: 8},
		{name: "tools missing", tools: true, tamper: func(root string) { os.Remove(filepath.Join(root, ".mcpolicy", artefact.ToolsPath("s"))) }, exit: 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, _ := project(t)
			s := spec("/bin/sh", "-c", relayProbe)
			if c.tools {
				s.Tools = toolSurface(t, root, "s")
			}
			b, err := json.Marshal(s.BwrapSpec)
			if err != nil {
				t.Fatal(err)
			}
			art := filepath.Join(root, ".mcpolicy", "bwrap", "s.json")
			write(t, art, string(b))
			if c.tamper != nil {
				c.tamper(root)
			}
			state := t.TempDir()
			stdin, w, err := os.Pipe() // the client's: the launcher's stdin
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			cmd := exec.Command(launcher, "--project-root", root, "--sha256", artefact.Digest(b), art)
			cmd.Stdin = stdin
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + root, "XDG_STATE_HOME=" + state}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			stdin.Close()
			if c.exit != 0 {
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != c.exit {
					t.Fatalf("exit %v, want %d\n%s", err, c.exit, stderr.String())
				}
				r, _ := launchlog.Last(launchlog.Path(filepath.Join(state, "mcpolicy"), root, "s"), "", time.Time{})
				if r == nil || r.Refused == "" || !strings.Contains(r.Fix, "mcpolicy build") {
					t.Fatalf("no refusal naming `mcpolicy build` in the launch log: %+v", r)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			var msg struct {
				Params struct{ Data string } `json:"params"`
			}
			if err := json.Unmarshal(out, &msg); err != nil {
				t.Fatalf("server said %q: %v\n%s", out, err, stderr.String())
			}
			fds := strings.Fields(msg.Params.Data)
			var st syscall.Stat_t
			if err := syscall.Fstat(int(w.Fd()), &st); err != nil {
				t.Fatal(err)
			}
			clientIn := "pipe:[" + strconv.FormatUint(st.Ino, 10) + "]"
			if len(fds) != 2 {
				t.Fatalf("server said %q", msg.Params.Data)
			}
			if relayed := fds[0] != clientIn; relayed != c.relayed {
				t.Errorf("the server's stdin is %s, the client's pipe %s: relayed %v, want %v", fds[0], clientIn, relayed, c.relayed)
			}
		})
	}
}
