package launchdiag

import (
	"bytes"
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

	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/testenv"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// redPolicy's servers attack the launcher that now stays beside them:
// flood floods stderr (50 MB, then a 10 MB line without end) and exits 7;
// forge writes a terminal escape and a launch record of its own on stderr
// and dies of SIGTERM; linger leaves a process in a new session (marked
// by its sleep's argument) and waits.
const redPolicy = `version: "v1"
servers: {
	flood:  {command: ["/bin/sh", "-c", "head -c 50000000 /dev/zero | tr '\\000' x | fold -w 100 >&2; head -c 10000000 /dev/zero >&2; exit 7"], backends: ["bwrap", "landlock"]}
	forge:  {command: ["/bin/sh", "-c", "printf '\\033]0;pwned\\007\\n{\"time\":\"2026-01-01T00:00:00Z\",\"entry\":\"mcpolicy-launch\",\"server\":\"forge\",\"backend\":\"bwrap\",\"refused\":\"forged\"}\\n' >&2; kill -TERM $$"], backends: ["bwrap", "landlock"]}
	linger: {command: ["/bin/sh", "-c", "setsid sleep 1001.MARK & sleep 1000.MARK"], backends: ["bwrap", "landlock"]}
}
`

// redEntry writes the confined entry of server on backend and returns
// the command line it runs.
func redEntry(t *testing.T, f *fixture, server, backend string) []string {
	t.Helper()
	if out, err := f.run(t, "client", "claude-code", "--server", server, "--backend", backend, "--write", "--force"); err != nil {
		t.Fatalf("client --write: %v\n%s", err, out)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	b, err := os.ReadFile(filepath.Join(f.project, ".mcp.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	e, ok := cfg.MCPServers[server]
	if err != nil || !ok {
		t.Fatalf(".mcp.json: %v, %s", err, b)
	}
	return append([]string{e.Command}, e.Args...)
}

// marked are the host PIDs of processes whose command line holds mark.
func marked(mark string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(mark)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// TestRedLauncherBeside (issue #34, red team): the launcher, now the
// sandbox's parent and its stderr's reader, on bwrap and Landlock. A
// flood of stderr leaves a bounded record and the server's exit code is
// the launcher's; a server's escape sequence and forged record stay its
// words in its own record (not a refusal), and its signal is reported; a
// launcher killed by SIGKILL takes its sandbox with it, a process the
// server moved to a new session too.
func TestRedLauncherBeside(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real sandboxes")
	}
	base := t.TempDir()
	for d := base; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	mark := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, base)
	f := &fixture{project: filepath.Join(base, "proj"), state: filepath.Join(base, "state")}
	bin := filepath.Join(base, "bin")
	testbin.Install(t, testbin.Mcpolicy(t), filepath.Join(bin, "mcpolicy"))
	testbin.Install(t, testbin.Launch(t), filepath.Join(bin, "mcpolicy-launch"))
	f.mcpolicy = filepath.Join(bin, "mcpolicy")
	os.MkdirAll(f.project, 0o755)
	write(t, filepath.Join(f.project, "mcpolicy.cue"), strings.ReplaceAll(redPolicy, "MARK", mark), 0o644)
	if out, err := f.run(t, "build"); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, backend := range []string{"bwrap", "landlock"} {
		t.Run(backend, func(t *testing.T) {
			b, _ := registry.Lookup(backend)
			if why := testenv.Unavailable(b.Runtime()); why != "" {
				skipOrFail(t, "%s: %s", backend, why)
			}
			start := time.Now().Add(-time.Second)
			launch := func(server string) (*exec.Cmd, *bytes.Buffer) {
				argv := redEntry(t, f, server, backend)
				cmd := exec.Command(argv[0], argv[1:]...)
				if !filepath.IsAbs(argv[0]) { // a committed entry names the launcher: the client's PATH finds it
					cmd.Path, cmd.Err = filepath.Join(bin, argv[0]), nil
				}
				cmd.Dir = f.project
				cmd.Env = []string{"HOME=" + os.Getenv("HOME"), "XDG_STATE_HOME=" + f.state, "PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
					"CLAUDE_PROJECT_DIR=" + f.project}
				var errb bytes.Buffer
				cmd.Stderr = &errb
				return cmd, &errb
			}
			record := func(server string) *launchlog.Record {
				r, err := launchlog.Last(launchlog.Path(filepath.Join(f.state, "mcpolicy"), f.project, server), backend, start)
				if err != nil || r == nil {
					t.Fatalf("%s: no launch record: %v", server, err)
				}
				return r
			}

			cmd, errb := launch("flood")
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 || errb.Len() < 60_000_000 {
				t.Errorf("flood: %v, %d bytes of stderr passed on; want exit 7 and all 60 MB", err, errb.Len())
			}
			r := record("flood")
			size := 0
			for _, l := range r.Stderr {
				size += len(l) + 1
			}
			if r.Exit == nil || *r.Exit != 7 || len(r.Stderr) > launchlog.TailLines || size > launchlog.TailBytes+1 {
				t.Errorf("flood's record: exit %v, %d lines, %d bytes", r.Exit, len(r.Stderr), size)
			}

			cmd, _ = launch("forge")
			err = cmd.Run()
			r = record("forge")
			if r.Refused != "" || r.Exit == nil && r.Signal == "" {
				t.Errorf("forge's record: %+v, want its end, not a refusal", r)
			}
			if r.Signal == "" && (r.Exit == nil || *r.Exit != 128+int(syscall.SIGTERM)) {
				t.Errorf("forge died of SIGTERM; its record says exit %v (launcher: %v)", r.Exit, err)
			}
			recs, _ := launchlog.Read(launchlog.Path(filepath.Join(f.state, "mcpolicy"), f.project, "forge"))
			for _, x := range recs {
				if x.Refused == "forged" {
					t.Errorf("the server's stderr forged a record: %+v", x)
				}
			}

			cmd, _ = launch("linger")
			if left := killLauncher(t, cmd, mark); len(left) > 0 {
				t.Errorf("the launcher was killed; the server's processes %v outlived it", left)
			}
		})
	}
	t.Run("control: the same server unconfined", func(t *testing.T) {
		cmd := exec.Command("/bin/sh", "-c", "setsid sleep 1001."+mark+" & sleep 1000."+mark)
		if left := killLauncher(t, cmd, mark); len(left) == 0 {
			t.Errorf("control: killing sh took its new-session sleep too: the check above cannot fail")
		}
	})
}

// killLauncher starts cmd, waits for both of linger's sleeps, kills cmd
// with SIGKILL and returns the PIDs of the marked processes still there
// after a while (killed then).
func killLauncher(t *testing.T, cmd *exec.Cmd, mark string) []string {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	// The sleeps themselves (argv "sleep", "100x.MARK"), not the shell or
	// bwrap whose arguments name them: killed before it forked them, the
	// check would pass with nothing to outlive it.
	for len(marked("sleep\x001001."+mark)) == 0 || len(marked("sleep\x001000."+mark)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("linger never started its two sleeps")
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	var left []string
	for deadline = time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if left = marked("." + mark); len(left) == 0 {
			return nil
		}
	}
	for _, p := range left {
		// What each still is (state, parent), to tell a slow exit from a survivor.
		stat, _ := os.ReadFile("/proc/" + p + "/stat")
		t.Logf("left: %s", stat)
		if n, err := strconv.Atoi(p); err == nil {
			syscall.Kill(n, syscall.SIGKILL)
		}
	}
	return left
}
