package escape_test

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Landlock-alone channels: without user namespaces (hosts that
// restrict them; the policy accepts landlock-tcp-only) Landlock confines
// opening, creating and removing files and TCP's connect and bind, but not
// a file's mode, owner, times or extended attributes by path, nor the
// connect a TCP Fast Open send makes, nor the port listen(2) binds on an
// unbound socket; sock_diag lists the host's sockets. A red team made the
// user's private key world-readable, sent to a host listener and took
// connections from the network, from a server whose network is none. The
// seccomp filter (Options.NoNamespaces) refuses those calls there.
var landlockAloneScenarios = []scenario{
	{
		name: "landlock-alone-channels", spec: projectSpec{helper: true, accept: []string{"landlock-tcp-only"}}, backends: []string{"landlock"}, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			uid := throttleUID(t)
			for _, noNS := range []bool{false, true} {
				how, opts := entryWith(t, sb, uid, noNS)
				key := hostFile(t, uid)
				ro := roGrantFile(t, sb, uid)
				l := loopbackListener(t)
				snap := sb.snapshot(t)
				o := sb.launchWith(t, how, sb.entry.Command, sb.entry.Args, opts, aloneSteps(key, ro, l.addr(), noNS, true))
				o.requireDenied(t, sb.backend)
				if fi, err := os.Stat(filepath.Join(sb.root, ro)); err != nil || fi.Mode().Perm() != 0o644 {
					t.Errorf("%s via %s: the read-only grant's file changed: %v %v", sb.backend, how, fi.Mode(), err)
				}
				if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 || fi.ModTime().Unix() < 1000 {
					t.Errorf("%s via %s: the user's file outside the grants changed: %v %v", sb.backend, how, fi.Mode(), err)
				}
				if got := l.received(); got != "" {
					t.Errorf("%s via %s: the host listener received %q from the server", sb.backend, how, got)
				}
				sb.requireUnchanged(t, snap)
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The payload on the host as the client spawns the entry's
			// command, as the server's user.
			uid := throttleUID(t)
			key := hostFile(t, uid)
			ro := roGrantFile(t, sb, uid)
			l := loopbackListener(t)
			steps := aloneSteps(key, ro, l.addr(), true, false)
			sb.launchBare(t, launchOpts{cred: uid.cred}, steps...).requireSucceeded(t, "bare", names(steps)...)
			if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o666 {
				t.Errorf("bare: the file is %v (%v), want 0666: the suite cannot see a mode changed", fi.Mode(), err)
			}
			if got := l.received(); !strings.Contains(got, "fast-open-from-the-server") {
				t.Errorf("bare: the host listener received %q: the suite cannot see a Fast Open send (net.ipv4.tcp_fastopen must enable the client, as by default)", got)
			}
		},
	},
}

// aloneSteps chmod and touch a file of the user's outside the grants,
// send to a host listener with MSG_FASTOPEN, listen on an unbound socket
// and open a sock_diag socket. With namespaces the file and the listener
// are out of sight, and listen and sock_diag see an empty network
// namespace (allowed: nothing to reach); without, the filter refuses all.
func aloneSteps(file, ro, addr string, noNS, deny bool) []step {
	attempt := func(name, sh string, errnos ...string) step {
		if deny {
			return denyWith(name, sh, errnos...)
		}
		return may(name, sh)
	}
	hidden := func(name, sh string, errnos ...string) step {
		if !noNS {
			return may(name, sh)
		}
		return attempt(name, sh, errnos...)
	}
	return []step{
		attempt("chmod 0666 the user's file outside the grants", "chmod 0666 "+shq(file), "EPERM", "ENOENT"),
		attempt("touch -c -d @1 the user's file outside the grants", "ls "+shq(file)+" >/dev/null && touch -c -d @1 "+shq(file), "EPERM", "ENOENT"),
		attempt("fchmod 0666 a read-only grant's file, opened for reading", helperSh("fchmod", ro, "666"), "EPERM", "EROFS"),
		attempt("sendto(MSG_FASTOPEN) to a host listener", helperSh("fastopen", addr), "EACCES", "ENETUNREACH"),
		hidden("listen(2) on an unbound socket", helperSh("listen"), "EACCES"),
		hidden("socket(AF_NETLINK, NETLINK_SOCK_DIAG)", helperSh("sockdiag"), "EACCES"),
	}
}

// hostFile is a private file of the server's user outside every grant: a
// stand-in for ~/.ssh/id_ed25519.
func hostFile(t *testing.T, uid throttleUser) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpolicy-escape-home-") // reachable by the server's user: t.TempDir's parent is the test's alone
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	p := filepath.Join(dir, "id_ed25519")
	must(t, os.WriteFile(p, []byte("private key\n"), 0o600))
	if uid.cred != nil {
		must(t, os.Chown(p, uid.id, uid.gid()))
	}
	return p
}

// roGrantFile is a file of the server's user in its read-only grant (the
// project), relative to the project.
func roGrantFile(t *testing.T, sb *sandbox, uid throttleUser) string {
	t.Helper()
	const name = "ro-config"
	p := filepath.Join(sb.root, name)
	must(t, os.WriteFile(p, []byte("read-only\n"), 0o644))
	must(t, os.Chmod(p, 0o644))
	if uid.cred != nil {
		must(t, os.Chown(p, uid.id, uid.gid()))
	}
	return name
}

// tcpListener is a TCP listener on the host's loopback that keeps what it
// receives.
type tcpListener struct {
	l   net.Listener
	got chan string
}

func loopbackListener(t *testing.T) *tcpListener {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	h := &tcpListener{l: l, got: make(chan string, 16)}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				line, _ := bufio.NewReader(c).ReadString('\n')
				h.got <- line
			}()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return h
}

func (h *tcpListener) addr() string { return h.l.Addr().String() }

// received is what reached the listener so far.
func (h *tcpListener) received() string {
	time.Sleep(300 * time.Millisecond)
	var b strings.Builder
	for {
		select {
		case s := <-h.got:
			b.WriteString(s)
		default:
			return b.String()
		}
	}
}
