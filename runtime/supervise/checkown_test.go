//go:build linux

package supervise

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/seatbelt"
)

// TestCheckOwnSocket: the socket bwrap is to bind must be this run's
// proxy. Its own passes; a socket another process listens on at the path
// is refused, whoever the kernel says called listen (a red team made that
// record name the run's pid: a socket listened on by a process that had
// exited, the pid since reused by the run).
func TestCheckOwnSocket(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	if os.Getenv("SUPERVISE_TEST_LISTEN") != "" {
		ln, err := net.Listen("unix", os.Getenv("SUPERVISE_TEST_LISTEN"))
		if err != nil {
			os.Exit(2)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				bufio.NewReader(c).ReadString('\n') // read the token, as an impostor would
				c.Close()
			}
		}()
		os.Stdout.WriteString("ready\n")
		bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	// seatbelt: startProxy stops before it looks for a static forwarder.
	s := &session{plan: &compiler.Plan{Server: "s"}, opt: Options{Backend: seatbelt.Backend}, rt: seatbelt.Seatbelt.Runtime(), checkPeers: true}
	if err := s.startProxy(); err != nil {
		t.Fatal(err)
	}
	defer s.cleanup()
	openPath := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fd
	}
	fd := openPath(s.machine.EgressSocket)
	if err := s.checkOwn(fd); err != nil {
		t.Errorf("the run's own socket: %v", err)
	}
	unix.Close(fd)

	other := filepath.Join(t.TempDir(), "egress.sock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCheckOwnSocket$")
	cmd.Env = append(os.Environ(), "SUPERVISE_TEST_LISTEN="+other)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("impostor: %q", line)
	}
	fd = openPath(other)
	defer unix.Close(fd)
	if err := s.checkOwn(fd); err == nil || !strings.Contains(err.Error(), "not this mcpolicy run's proxy") {
		t.Errorf("another process's socket: %v, want refused", err)
	}
}
