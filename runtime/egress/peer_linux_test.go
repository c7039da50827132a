package egress

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"
)

// TestGuardPeers: a guarded socket serves the process tree it names and
// refuses, with a 403 and a logged deny, a process outside it or running
// as another uid. The control (the same connection, admitted) is served,
// so a refusal is the guard's doing.
func TestGuardPeers(t *testing.T) {
	dir, err := os.MkdirTemp("", "guard-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sleep := exec.Command("sleep", "60") // a process this test is not a descendant of
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()

	for _, c := range []struct {
		name      string
		root, uid int
		admit     bool // no check at all: the control
		refused   string
	}{
		{name: "own-tree", root: os.Getpid(), uid: os.Geteuid()},
		{name: "control", admit: true},
		{name: "other-tree", root: sleep.Process.Pid, uid: os.Geteuid(), refused: "not a process of the sandbox"},
		{name: "other-uid", root: os.Getpid(), uid: os.Geteuid() + 1, refused: fmt.Sprintf("not the sandbox's uid %d", os.Geteuid()+1)},
		{name: "no-sandbox", root: 0, uid: os.Geteuid(), refused: "no sandbox process"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			p := &Proxy{Log: &log}
			sock := filepath.Join(dir, c.name+".sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: p}
			go srv.Serve(p.Guard(ln, func(conn net.Conn) error {
				if c.admit {
					return nil
				}
				_, err := CheckPeer(conn, c.root, c.uid)
				return err
			}))
			defer srv.Close()

			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			// A request the proxy answers itself: a non-proxy request is a 400.
			fmt.Fprint(conn, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if c.refused == "" {
				if l := p.logged(&log); resp.StatusCode != http.StatusBadRequest || l != "" {
					t.Errorf("admitted: %d %q, log %q; want the proxy's 400 and no refusal", resp.StatusCode, body, l)
				}
				return
			}
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), c.refused) {
				t.Errorf("%d %q, want 403 naming %q", resp.StatusCode, body, c.refused)
			}
			// The refusal is logged before it is answered.
			if l := p.logged(&log); !strings.Contains(l, `"action":"deny"`) || !strings.Contains(l, c.refused) || strings.Contains(l, `"host"`) {
				t.Errorf("log %q: want one deny naming %q, with no host", l, c.refused)
			}
		})
	}
}

// TestDescends: a grandchild descends from this process; this process
// does not descend from its child; a process that is gone is an error.
func TestDescends(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var grandchild int
	if _, err := fmt.Fscan(out, &grandchild); err != nil {
		t.Fatal(err)
	}
	defer exec.Command("kill", fmt.Sprint(grandchild)).Run()
	for _, c := range []struct {
		pid, root int
		want      bool
	}{
		{grandchild, os.Getpid(), true},
		{grandchild, cmd.Process.Pid, true},
		{grandchild, grandchild, true},
		{os.Getpid(), cmd.Process.Pid, false},
		{cmd.Process.Pid, grandchild, false},
	} {
		if got, err := Descends(c.pid, c.root); err != nil || got != c.want {
			t.Errorf("Descends(%d, %d) = %v, %v; want %v", c.pid, c.root, got, err, c.want)
		}
	}
	if _, err := Descends(1<<30, os.Getpid()); err == nil {
		t.Error("a pid that does not exist descends without error")
	}
}

// TestGuardPeerExited: a peer of the right tree that is gone by the time
// it is checked is refused (its pid may already be someone else's).
func TestGuardPeerExited(t *testing.T) {
	if sock := os.Getenv("EGRESS_TEST_DIAL"); sock != "" {
		c, err := net.Dial("unix", sock)
		if err != nil {
			os.Exit(2)
		}
		fmt.Fprint(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
		os.Exit(0) // gone without waiting for the answer
	}
	dir, err := os.MkdirTemp("", "guard-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "egress.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	p := &Proxy{Log: &log}
	cmd := exec.Command(os.Args[0], "-test.run=^TestGuardPeerExited$")
	cmd.Env = append(os.Environ(), "EGRESS_TEST_DIAL="+sock)
	exited := make(chan struct{})
	result := make(chan error, 1)
	srv := &http.Server{Handler: p}
	go srv.Serve(p.Guard(ln, func(conn net.Conn) error {
		<-exited // the child has exited and been reaped
		_, err := CheckPeer(conn, os.Getpid(), os.Geteuid())
		result <- err
		return err
	}))
	defer srv.Close()
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	close(exited)
	err = <-result
	t.Logf("refused: %v", err)
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("a peer that has exited: %v, want refused as exited", err)
	}
}

// TestGuardRefusalsHaveTheirOwnBudget: any process of the user's may
// connect to the socket as often as it likes (a red team: 29,000 refused
// connections in 20 s, the 64 MB log full in four minutes, the server's
// own decisions unlogged after that). One proxy logs the first
// MaxRefusedPeerLines refusals in full, counts the rest, and says how many
// when it closes.
func TestGuardRefusalsHaveTheirOwnBudget(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "egress.sock"))
	if err != nil {
		t.Fatal(err)
	}
	log := &syncbuf.Buffer{}
	p := &Proxy{Log: log}
	go p.Serve(p.Guard(ln, func(net.Conn) error { return errors.New("not a process of the sandbox") }))
	const n = MaxRefusedPeerLines + 50
	for range n {
		c, err := net.Dial("unix", filepath.Join(dir, "egress.sock"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n")
		io.Copy(io.Discard, c) // the 403, then EOF
		c.Close()
	}
	p.Close()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != MaxRefusedPeerLines+1 {
		t.Fatalf("%d refusals: %d lines, want %d and a count", n, len(lines), MaxRefusedPeerLines)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "50 more connections from outside the sandbox") {
		t.Errorf("the last line does not count the rest: %s", last)
	}
}
