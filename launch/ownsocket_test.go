//go:build linux

package launch_test

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/launch"
)

const roleListen = "__mcpolicy-test-listen"

// listenMain listens on the unix socket path, says so, and serves until
// its stdin closes: another process of the user's, as a second server
// with a grant of the socket's folder is.
func listenMain(path string) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
		return
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	os.Stdout.WriteString("ready\n")
	bufio.NewReader(os.Stdin).ReadString('\n')
}

// TestOwnSocketIsServedByThisProcess: mcpolicy run's proxy socket is
// bound into bwrap by descriptor, and that descriptor must reach the
// socket this process listens on. Another process's socket at the same
// path (a second server of the user's, with a grant of the socket's
// folder, renamed the folder away and listened in its place: a red team
// won one try in three) is refused; the proxy's own is accepted.
func TestOwnSocketIsServedByThisProcess(t *testing.T) {
	const target = "/.mcpolicy/egress.sock"
	specFor := func(sock string, own bool) *launch.BwrapSpec {
		s := &launch.BwrapSpec{Backend: "bwrap", Server: "s", Plan: "sha256:00",
			Args: []string{"--ro-bind", sock, target, "--", "true"}}
		if own {
			s.OwnSocket = target
		}
		return s
	}
	closeAll := func(b *launch.Bwrap) {
		for _, fd := range b.FDs {
			unix.Close(fd)
		}
	}

	ours := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", ours)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	b, err := launch.PrepareBwrapAt(specFor(ours, true), t.TempDir(), "", nil, "/usr/bin/bwrap")
	if err != nil {
		t.Fatalf("this process's own socket refused: %v", err)
	}
	closeAll(b)

	theirs := filepath.Join(t.TempDir(), "egress.sock")
	cmd := exec.Command(os.Args[0], roleListen, theirs)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("listener: %q", line)
	}
	_, err = launch.PrepareBwrapAt(specFor(theirs, true), t.TempDir(), "", nil, "/usr/bin/bwrap")
	if err == nil || !strings.Contains(err.Error(), "not by this mcpolicy run") {
		t.Errorf("another process's socket: got %v, want a refusal", err)
	}
	// The control: without the check, the same socket is bound.
	if b, err = launch.PrepareBwrapAt(specFor(theirs, false), t.TempDir(), "", nil, "/usr/bin/bwrap"); err != nil {
		t.Errorf("control: %v", err)
	} else {
		closeAll(b)
	}
}
