package escape_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The terminal scenario: a client started in a terminal hands the entry
// that terminal as stdin, stdout and stderr (and, leading a session, as its
// controlling terminal). Holding it, a server could read what the user
// types to the client, turn echo off (the user's next password shows, or
// the shell looks dead), and write escape sequences the terminal runs (OSC
// 52 sets the clipboard). The launcher gives the server pipes, relayed by
// itself re-executed outside the sandbox, the server's output with every
// control character spelt out (launch.ShieldTerminals); what the user
// types reaches the server's stdin through the relay, by design.
var terminalScenarios = []scenario{
	{
		// Podman's entry is docker's (the launcher's --engine path, the
		// same shield): left out for time.
		name: "terminal", spec: projectSpec{helper: true}, backends: []string{"bwrap", "docker", "landlock"}, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			p := openPty(t)
			echo := p.echo(t)
			before := sb.snapshot(t)
			steps := terminalSteps(true)
			o := sb.launchWith(t, "entry", sb.entry.Command, sb.entry.Args, launchOpts{env: sb.entry.Env, tty: p}, steps)
			// The daemon acts terminalDaemonDelay after it started:
			// whatever it reaches comes by then.
			late := p.read(t, 300*time.Millisecond, terminalDaemonDelay+500*time.Millisecond)
			o.requireDenied(t, sb.backend)
			for _, s := range []string{steps[6].name, steps[7].name} {
				if r := o.results[s]; !r.ok {
					t.Errorf("%s: %s: %s: the payload could not write, so what the terminal shows proves nothing", sb.backend, s, r.describe())
				}
			}
			if r := o.results[steps[8].name]; !r.ok {
				t.Errorf("%s: %s: %s: the daemon never started, so its end proves nothing", sb.backend, steps[8].name, r.describe())
			}
			switch {
			case strings.Contains(o.tty, "\x1b") || strings.Contains(late, "\x1b"):
				t.Errorf("%s: a raw escape sequence reached the user's terminal:\n%q\nafter the entry returned:\n%q", sb.backend, o.tty, late)
			case !strings.Contains(o.tty, `\x1b]52;c;cHduZWQ=\x07`):
				t.Errorf("%s: the terminal does not show the OSC 52 sequence spelt out (the relay's escaping): %q", sb.backend, o.tty)
			default:
				t.Logf("%s: the OSC 52 sequence reached the terminal spelt out; after the entry returned the terminal got %q", sb.backend, late)
			}
			if now := p.echo(t); now != echo {
				t.Errorf("%s: the terminal's ECHO flag changed: %v -> %v", sb.backend, echo, now)
			} else {
				t.Logf("%s: the terminal's ECHO flag is unchanged (%v)", sb.backend, now)
			}
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The payload spawned as the client spawns the entry's
			// command, the terminal its stdin, stdout and stderr.
			p := openPty(t)
			if !p.echo(t) {
				t.Fatalf("a new pty has ECHO off: the control cannot see it turned off")
			}
			steps := terminalSteps(false)
			o := sb.launchBare(t, launchOpts{tty: p}, steps...)
			late := p.read(t, 300*time.Millisecond, terminalDaemonDelay+500*time.Millisecond)
			o.requireSucceeded(t, "bare", names(steps)...)
			if !strings.Contains(o.tty, oscRaw) {
				t.Errorf("bare: the raw OSC 52 sequence did not reach the terminal: the suite cannot see one: %q", o.tty)
			}
			// The daemon acts terminalDaemonDelay after it started, which
			// may be before the harness stops reading the command's output.
			if !strings.Contains(o.tty+late, "daemon: "+oscRaw) {
				t.Errorf("bare: the daemon's OSC 52 sequence did not reach the terminal: %q, then %q", o.tty, late)
			}
			if p.echo(t) {
				t.Errorf("bare: ECHO is still on: the suite cannot see it turned off")
			} else {
				t.Logf("bare: the server held the terminal: ECHO off, the raw sequence written (and by its daemon after the command returned: %q)", late)
			}
		},
	},
}

// oscRaw is the helper's OSC 52 sequence (helper.OSC52) as a terminal
// receives it unescaped.
const oscRaw = "\x1b]52;c;cHduZWQ=\x07"

// terminalDaemonDelay is how long the daemon the payload leaves waits
// before it acts: past the entry's return.
const terminalDaemonDelay = 300 * time.Millisecond

// terminalSteps: the payload's stdin, stdout and stderr (0, and 5 and 6,
// where the payload keeps its own stdout and stderr: a step's are its
// result's) and /dev/tty are no terminal (ENOTTY; /dev/tty: no controlling
// terminal in a new session, ENXIO, or none in the container), echo cannot
// be turned off, the sequence written to stdout and stderr is the test's
// to read on the terminal, and a daemon in a new session holding all three
// tries again once the entry has returned.
func terminalSteps(confined bool) []step {
	denied := func(name, sh string, errnos ...string) step {
		if confined {
			return denyWith(name, sh, errnos...)
		}
		return may(name, sh)
	}
	noTTY := []string{"ENXIO", "ENOENT", "EACCES", "EPERM", "EIO", "ENOTTY"}
	return []step{
		denied("TCGETS on stdin", helperSh("termios", "0"), "ENOTTY"),
		denied("TCGETS on stdout", helperSh("termios", "5"), "ENOTTY"),
		denied("TCGETS on stderr", helperSh("termios", "6"), "ENOTTY"),
		denied("open /dev/tty and TCGETS it", helperSh("termios", "/dev/tty"), noTTY...),
		denied("turn echo off on stdin", helperSh("noecho", "0"), "ENOTTY"),
		denied("turn echo off on stderr", helperSh("noecho", "6"), "ENOTTY"),
		may("write an OSC 52 sequence to stdout", helperSh("emit", "5")),
		may("write an OSC 52 sequence to stderr", helperSh("emit", "6")),
		may("leave a daemon in a new session holding stdin, stdout and stderr", helperSh("ttydaemon", strconv.Itoa(int(terminalDaemonDelay.Milliseconds())), "0", "5", "6")),
	}
}

// echo is whether the terminal's ECHO flag is set (the test's side of
// the pty: the flag is the pair's).
func (p *pty) echo(t *testing.T) bool {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(p.slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatalf("TCGETS on the pty: %v", err)
	}
	return tio.Lflag&unix.ECHO != 0
}

// read is what the terminal shows from now: read from the master for at
// least atLeast, then until it stays silent for quiet.
func (p *pty) read(t *testing.T, quiet, atLeast time.Duration) string {
	t.Helper()
	var got []byte
	buf := make([]byte, 4096)
	start, last := time.Now(), time.Now()
	for time.Since(start) < atLeast || time.Since(last) < quiet {
		fds := []unix.PollFd{{Fd: int32(p.master), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 50)
		if err != nil && !errors.Is(err, unix.EINTR) {
			t.Fatalf("poll on the pty master: %v", err)
		}
		if n == 0 || fds[0].Revents&unix.POLLIN == 0 {
			continue
		}
		k, err := unix.Read(p.master, buf)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) {
				continue
			}
			break
		}
		got = append(got, buf[:k]...)
		last = time.Now()
	}
	return string(got)
}
