package supervise_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/supervise"
)

// dialEnv turns the test binary into the client of TestEgressSocketPeers:
// it connects to the socket named there, sends the request in
// dialRequestEnv and prints "dial ERRNO" or the status and body it got.
const (
	dialEnv        = "MCPOLICY_TEST_DIAL_SOCKET"
	dialRequestEnv = "MCPOLICY_TEST_DIAL_REQUEST"
)

func dial() int {
	c, err := net.Dial("unix", os.Getenv(dialEnv))
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Printf("dial %s\n", errnoName(errno))
		} else {
			fmt.Printf("dial %v\n", err)
		}
		return 0
	}
	defer c.Close()
	io.WriteString(c, os.Getenv(dialRequestEnv))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		fmt.Printf("read %v\n", err)
		return 0
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s\n", resp.StatusCode, strings.TrimSpace(string(body)))
	return 0
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.EACCES:
		return "EACCES"
	case syscall.ENOENT:
		return "ENOENT"
	case syscall.ECONNREFUSED:
		return "ECONNREFUSED"
	}
	return strconv.Itoa(int(e))
}

// attacker is the uid of another local user: no account needed.
const attacker = 12345

// TestEgressSocketPeers: the proxy serves its own sandbox only. Another
// uid (a process run as 12345) cannot reach the socket at all: its folder
// is 0700. Given the old layout (a 0755 folder, a 0666 socket) it
// reaches it and is refused by the proxy, which checks who connected
// (SO_PEERCRED, the process tree): as it refuses a process of our own
// uid outside the sandbox, that is, another sandbox of the same user
// that reaches the path. The control, the same connection with the check
// off, is served: the refusals are the check's doing. The sandbox's own
// process is served.
func TestEgressSocketPeers(t *testing.T) {
	setup(t)
	// Outside any runtime directory: the old layout's folder must be
	// reachable through its parent (TMPDIR, 0755) for the control.
	t.Setenv("XDG_RUNTIME_DIR", "")
	bin := filepath.Join(base, "bin", "supervise.test") // the client, executable by any uid
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		copyFile(t, self, bin)
	}
	api := fmt.Sprintf("api.test:%d", w.httpPort)
	request := fmt.Sprintf("GET http://%s/ HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", api, api)
	plan := &compiler.Plan{Server: "peers", Network: compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations(api)}}
	resolve, err := egress.HostsResolver(strings.NewReader(w.hosts), noDNS)
	if err != nil {
		t.Fatal(err)
	}

	// start runs the client as uid (this process's when < 0).
	start := func(t *testing.T, socket string, uid int) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(bin)
		cmd.Env = []string{dialEnv + "=" + socket, dialRequestEnv + "=" + request}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if uid >= 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	// sandbox stands for a sandbox's first process: running as uid, and
	// not the client's ancestor.
	sandbox := func(t *testing.T, uid int) int {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd.Process.Pid
	}
	// With a runtime directory of ours, the folder goes there (0700 too).
	t.Run("runtime-dir", func(t *testing.T) {
		run := filepath.Join(base, "run")
		t.Setenv("XDG_RUNTIME_DIR", run)
		socket, _, stop, err := supervise.StartProxy(plan, supervise.Options{Self: w.bin, Resolve: resolve, Exempt: standIns(w.hosts)}, true)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if got := filepath.Dir(filepath.Dir(socket)); got != run {
			t.Errorf("the socket %s is not in XDG_RUNTIME_DIR %s", socket, run)
		}
	})

	me := os.Geteuid()
	served := "200 " + strings.TrimSpace(w.body)
	for _, c := range []struct {
		name       string
		client     int  // the client's uid
		sandboxUID int  // the sandbox's uid
		own        bool // the client is the sandbox's process
		oldLayout  bool // 0755 folder, 0666 socket: the path reachable by anyone
		noCheck    bool // the control: every connection admitted
		want       string
	}{
		{name: "other-uid", client: attacker, sandboxUID: attacker, want: "dial EACCES"},
		{name: "other-uid-old-layout", client: attacker, sandboxUID: attacker, oldLayout: true,
			want: "403 mcpolicy egress proxy: connection refused: pid PID, uid 12345: not a process of the sandbox"},
		{name: "other-uid-old-layout-sandbox-ours", client: attacker, sandboxUID: me, oldLayout: true,
			want: fmt.Sprintf("403 mcpolicy egress proxy: connection refused: pid PID, uid 12345: not the sandbox's uid %d", me)},
		{name: "control-other-uid-old-layout-no-check", client: attacker, sandboxUID: attacker, oldLayout: true, noCheck: true, want: served},
		{name: "our-uid-outside-the-sandbox", client: me, sandboxUID: me,
			want: fmt.Sprintf("403 mcpolicy egress proxy: connection refused: pid PID, uid %d: not a process of the sandbox", me)},
		{name: "control-our-uid-no-check", client: me, sandboxUID: me, noCheck: true, want: served},
		{name: "the-sandbox", client: me, sandboxUID: me, own: true, want: served},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log syncbuf.Buffer
			socket, trust, stop, err := supervise.StartProxy(plan, supervise.Options{Self: w.bin, Log: &log, Resolve: resolve, Exempt: standIns(w.hosts)}, !c.noCheck)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			dir := filepath.Dir(socket)
			if filepath.Dir(dir) != tmp {
				t.Errorf("the socket's folder %s is not in TMPDIR %s", dir, tmp)
			}
			for path, mode := range map[string]os.FileMode{dir: os.ModeDir | 0o700, socket: os.ModeSocket | 0o600} {
				fi, err := os.Lstat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode() != mode || int(fi.Sys().(*syscall.Stat_t).Uid) != me {
					t.Errorf("%s: %v, uid %d; want %v, uid %d", path, fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid, mode, me)
				}
			}
			if c.oldLayout {
				os.Chmod(dir, 0o755)
				os.Chmod(socket, 0o666)
			}
			hits := w.hits["http"].Load()
			client, out := start(t, socket, c.client)
			if c.own {
				trust(client.Process.Pid, c.sandboxUID)
			} else {
				trust(sandbox(t, c.sandboxUID), c.sandboxUID)
			}
			client.Wait()
			want := strings.ReplaceAll(c.want, "PID", strconv.Itoa(client.Process.Pid))
			if got := strings.TrimSpace(out.String()); got != want {
				t.Errorf("the client (uid %d) got %q, want %q", c.client, got, want)
			}
			stop()
			ds, err := parseDecisions(log.String())
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == served:
				checkDecisions(t, ds, []wantDecision{{action: "allow", method: "GET", host: "api.test", port: w.httpPort, rule: api, addr: upstreamAddr, down: true}})
				if w.hits["http"].Load() == hits {
					t.Errorf("served, but the upstream saw no request")
				}
			case strings.HasPrefix(c.want, "403"):
				if len(ds) != 1 || ds[0].Action != "deny" || ds[0].Host != "" || "403 mcpolicy egress proxy: "+ds[0].Reason != want {
					t.Errorf("decision log %q: want one deny with the refusal's reason", log.String())
				}
				if w.hits["http"].Load() != hits {
					t.Errorf("refused, but the upstream saw a request")
				}
			default:
				if len(ds) != 0 {
					t.Errorf("decision log %q: want none, nothing reached the proxy", log.String())
				}
			}
		})
	}
}
