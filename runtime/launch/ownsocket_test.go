//go:build linux

package launch_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
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

// TestOwnSocketIsChecked: the socket mcpolicy run's proxy serves is bound
// into bwrap by descriptor, and PrepareBwrap hands that very descriptor to
// CheckOwn (supervise proves through it that its own proxy answers). A
// refusal stops the start; a spec naming the socket without a check is
// refused; DialDescriptor reaches the socket at the path when it was
// opened, not whatever is there later.
func TestOwnSocketIsChecked(t *testing.T) {
	const target = "/.mcpolicy/egress.sock"
	sock := filepath.Join(t.TempDir(), "egress.sock")
	cmd := exec.Command(os.Args[0], roleListen, sock)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("listener: %q", line)
	}
	specWith := func(check func(int) error) *launch.BwrapSpec {
		return &launch.BwrapSpec{BwrapSpec: artefact.BwrapSpec{Backend: "bwrap", Server: "s", Plan: "sha256:00",
			Args: []string{"--ro-bind", sock, target, "--", "true"}}, OwnSocket: target, CheckOwn: check}
	}
	var dialed bool
	b, err := launch.PrepareBwrapAt(specWith(func(fd int) error {
		// The path now names another socket: the descriptor still
		// reaches the one opened.
		os.Rename(sock, sock+".old")
		defer os.Rename(sock+".old", sock)
		c, err := launch.DialDescriptor(fd)
		if err == nil {
			dialed = true
			c.Close()
		}
		return err
	}), t.TempDir(), "", nil, "/usr/bin/bwrap")
	if err != nil || !dialed {
		t.Fatalf("a check that passes: %v (dialed %v)", err, dialed)
	}
	for _, fd := range b.FDs {
		unix.Close(fd)
	}
	if _, err := launch.PrepareBwrapAt(specWith(func(int) error { return errors.New("not ours") }), t.TempDir(), "", nil, "/usr/bin/bwrap"); err == nil || !strings.Contains(err.Error(), "not ours") {
		t.Errorf("a check that refuses: %v", err)
	}
	if _, err := launch.PrepareBwrapAt(specWith(nil), t.TempDir(), "", nil, "/usr/bin/bwrap"); err == nil {
		t.Errorf("no check: started")
	}
}
