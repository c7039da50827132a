package testnetns

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// create makes the namespace, or says why it cannot.
func create(t testing.TB, addrs []string) (*NS, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, "not root: ip netns add needs CAP_SYS_ADMIN"
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, err.Error()
		}
	}
	b := make([]byte, 4)
	rand.Read(b)
	n := &NS{Name: "mcpolicy-test-" + hex.EncodeToString(b), fd: -1}
	n.Path = "/run/netns/" + n.Name
	if out, err := exec.Command("ip", "netns", "add", n.Name).CombinedOutput(); err != nil {
		return nil, fmt.Sprintf("ip netns add %s: %v: %s", n.Name, err, out)
	}
	t.Cleanup(func() {
		if n.fd >= 0 {
			unix.Close(n.fd)
		}
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", n.Name, err, out)
		}
	})
	cmds := [][]string{{"link", "set", "lo", "up"}}
	for _, a := range addrs {
		cmds = append(cmds, []string{"addr", "add", a + "/32", "dev", "lo"})
	}
	for _, c := range cmds {
		if out, err := exec.Command("ip", append([]string{"-n", n.Name}, c...)...).CombinedOutput(); err != nil {
			t.Fatalf("ip -n %s %v: %v: %s", n.Name, c, err, out)
		}
	}
	fd, err := unix.Open(n.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("%s: %v", n.Path, err)
	}
	n.fd = fd
	return n, ""
}

// in runs f on an OS thread of its own moved into the namespace. The
// thread is never unlocked: when f returns its goroutine ends and Go
// discards the thread, so nothing else ever runs in the namespace. A
// socket keeps the namespace it was made in, whichever thread uses it.
func (n *NS) in(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("setns %s: %w", n.Path, err)
			return
		}
		done <- f()
	}()
	return <-done
}

// Attach joins the namespace to the host's bridge (a container engine's
// network) with a veth pair: addr (CIDR, in the bridge's subnet) inside,
// the peer a port of the bridge; removed when the test ends. What the
// bridge's containers reach at addr is then the namespace, not the host.
func (n *NS) Attach(t testing.TB, bridge, addr string) {
	t.Helper()
	suffix := n.Name[len(n.Name)-8:]
	host, inside := "mcpv"+suffix+"h", "mcpv"+suffix+"n" // 13 characters: under IFNAMSIZ
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	run("link", "add", host, "type", "veth", "peer", "name", inside)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	run("link", "set", inside, "netns", n.Name)
	run("-n", n.Name, "addr", "add", addr, "dev", inside)
	run("-n", n.Name, "link", "set", inside, "up")
	run("link", "set", host, "master", bridge)
	run("link", "set", host, "up")
}
