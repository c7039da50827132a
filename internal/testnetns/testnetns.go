// Package testnetns is, for tests, a throwaway named network namespace:
// stand-in upstreams listen in it and what a test dials reaches them
// there, never the host's network. Named, so a subprocess can enter it
// (Command). Linux, as root.
package testnetns

import (
	"context"
	"net"
	"os"
	"os/exec"
	"testing"
)

// NS is a network namespace of the test's: lo up, holding its addresses.
type NS struct {
	Name string // mcpolicy-test-<random>
	Path string // /run/netns/Name: nsenter --net=Path
	fd   int
}

// New makes a namespace with addrs (IPv4 literals) on its lo, removed
// when the test ends. When it cannot be made, the test fails under
// CI=true and is skipped elsewhere.
func New(t testing.TB, addrs ...string) *NS {
	t.Helper()
	n, why := create(t, addrs)
	if why == "" {
		return n
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: a network namespace for the test: %s", why)
	}
	t.Skipf("a network namespace for the test: %s", why)
	return nil
}

// Listen is net.Listen in the namespace.
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.in(func() (err error) {
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// Dial is net.Dial in the namespace.
func (n *NS) Dial(network, addr string) (net.Conn, error) {
	return n.DialContext(context.Background(), network, addr)
}

// DialContext is net.Dialer's in the namespace (egress.Proxy.Dial's
// shape). addr is an address, not a name: a lookup's sockets could be
// made outside.
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.in(func() (err error) {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Command is exec.CommandContext(ctx, name, args...) run in the
// namespace, through nsenter: name is looked up as exec would, on this
// process's PATH (nsenter's would be the command's Env's).
func (n *NS) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	if path, err := exec.LookPath(name); err == nil {
		name = path
	}
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + n.Path, "--", name}, args...)...)
}
