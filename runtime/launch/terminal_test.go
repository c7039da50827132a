//go:build linux

package launch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// terminalChecks are the server's checks on the terminals a client may
// hand it (reapChecks asks first).
//
//	termios:FD   TCGETS on FD: "ok" on a terminal
//	emit:FD      write an OSC 52 clipboard sequence, a colour and a tab to FD
//	readline:FD  read one line from FD
//	ttydaemon:N  leave a process in a new session holding stdin and
//	             stderr for N seconds (Landlock alone lets it outlive the
//	             server: no PID namespace)
func terminalChecks(op, arg string) (string, bool) {
	fd, _ := strconv.Atoi(arg)
	switch op {
	case "termios":
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		return errResult(err), true
	case "emit":
		_, err := unix.Write(fd, []byte(oscClipboard+"\n"))
		return errResult(err), true
	case "ttydaemon": // leave a process in a new session holding stdin and stderr, for ARG seconds
		c := exec.Command(os.Args[0], roleInside, "sleep:"+arg)
		c.Stdin, c.Stderr = os.Stdin, os.Stderr
		c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		return errResult(c.Start()), true
	case "sleep":
		n, _ := strconv.Atoi(arg)
		time.Sleep(time.Duration(n) * time.Second)
		return "slept", true
	case "readline":
		line, err := bufio.NewReader(os.NewFile(uintptr(fd), "in")).ReadString('\n')
		if err != nil {
			return errResult(err), true
		}
		return strings.TrimSuffix(line, "\n"), true
	}
	return "", false
}

const oscClipboard = "\x1b]52;c;cHduZWQ=\x07\x1b[31mred\ttab"

// TestServerHoldsNoTerminal: a client started in a terminal may hand the
// server that terminal as stdin or stderr, open read-write: a red team's
// server read what the user typed to the client through its stderr and
// turned echo off. The server must hold pipes (TCGETS: ENOTTY), its output
// reach the terminal with escape sequences spelt out, what is typed reach
// it, and no relay outlive it or take a keystroke typed after it. With and
// without namespaces; the control (the wiring before) holds the terminals.
func TestServerHoldsNoTerminal(t *testing.T) {
	w := setupIssue14(t, artefact.AcceptTCPOnly, artefact.AcceptUnixSockets)
	for _, c := range []struct {
		name   string
		env    []string
		held   bool // the server holds the terminals (the control)
		daemon bool // the server leaves a daemon holding them
	}{
		{"namespaces", nil, false, false},
		{"Landlock alone", []string{"MCPOLICY_TEST_NO_NS=1"}, false, false},
		// A red team's daemon kept the relays, which went on taking the
		// user's keystrokes after the launcher had exited.
		{"Landlock alone, a daemon left", []string{"MCPOLICY_TEST_NO_NS=1"}, false, true},
		{"control (unhardened)", []string{"MCPOLICY_TEST_UNHARDENED=1"}, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			checks := []string{"termios:0", "termios:2", "emit:2", "readline:0"}
			if c.daemon {
				checks = append(checks, "ttydaemon:8")
			}
			w.checks(t, checks...)
			inM, inS := openPTY(t)
			errM, errS := openPTY(t)
			if _, err := inM.Write([]byte("typed-line\n")); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, w.bin, roleLauncher, w.ruleset)
			cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}, c.env...)
			var stdout bytes.Buffer
			cmd.Stdin, cmd.Stdout, cmd.Stderr = inS, &stdout, errS
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v\n%s", err, stdout.String())
			}
			got := map[string]string{}
			sc := bufio.NewScanner(&stdout)
			for sc.Scan() {
				var ch check
				if json.Unmarshal(sc.Bytes(), &ch) == nil {
					got[ch.Check] = ch.Result
				}
			}
			tty := readFor(t, errM, 2*time.Second)
			t.Logf("checks %v; the terminal got %q", got, tty)
			if got["readline:0"] != "typed-line" {
				t.Errorf("readline: %q, want what was typed", got["readline:0"])
			}
			if c.held {
				if got["termios:2"] != "ok" || !strings.Contains(tty, oscClipboard) {
					t.Errorf("control: the server should hold the terminal and its raw escape sequence reach it")
				}
				return
			}
			for _, fd := range []string{"0", "2"} {
				if got["termios:"+fd] != "ENOTTY" {
					t.Errorf("TCGETS on fd %s: %q, want ENOTTY (a pipe, not the terminal)", fd, got["termios:"+fd])
				}
			}
			if strings.Contains(tty, "\x1b") || !strings.Contains(tty, `\x1b]52;c;cHduZWQ=\x07\x1b[31mred`+"\ttab") {
				t.Errorf("the terminal got %q, want the sequence spelt out, the tab kept", tty)
			}
			// Nothing typed after the server is taken by a relay.
			if _, err := inM.Write([]byte("after\n")); err != nil {
				t.Fatal(err)
			}
			if after := readFor(t, inS, time.Second); !strings.Contains(after, "after") {
				t.Errorf("a line typed after the server ended was taken: the terminal's reader got %q", after)
			}
			if n := relays(t); n > 0 {
				t.Errorf("%d relay(s) left running", n)
			}
		})
	}
}

// readFor reads what f has until it stays silent for d.
func readFor(t *testing.T, f *os.File, d time.Duration) string {
	fd := int(f.Fd())
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
		if n <= 0 || err != nil {
			return b.String()
		}
		n, err = unix.Read(fd, buf)
		if n <= 0 || err != nil {
			return b.String()
		}
		b.Write(buf[:n])
	}
}

// relays counts the terminal relays running (a short grace for the last
// to see its pipe closed).
func relays(t *testing.T) int {
	for i := 0; ; i++ {
		n := 0
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if bytes.Contains(b, []byte(launch.RelayArg)) {
				n++
			}
		}
		if n == 0 || i == 20 {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
}
