package testnetns

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// addr is TEST-NET-2: on no interface of the host.
const addr = "198.51.100.41"

// TestNamespace: a listener in the namespace is reached by Dial, not by a
// dial from the host's namespace at the same address (which may reach
// something else: a network that answers every address); a command runs
// there; the namespace goes at the end.
func TestNamespace(t *testing.T) {
	var name string
	t.Run("ns", func(t *testing.T) {
		n := New(t, addr)
		name = n.Name
		ln, err := n.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		target := ln.Addr().String()

		// From the host: whatever answers, the listener must not. A
		// connection the kernel completed would be queued for Accept.
		if c, err := net.DialTimeout("tcp", target, 2*time.Second); err == nil {
			t.Logf("from the host, %s answers (not the namespace's listener, checked below)", target)
			defer c.Close()
		}
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(300 * time.Millisecond))
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Fatalf("a dial from the host's namespace reached the listener in %s", n.Name)
		} else if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal(err)
		}
		ln.(*net.TCPListener).SetDeadline(time.Time{})

		// From the namespace: reached, and usable from any goroutine.
		c, err := n.DialContext(context.Background(), "tcp", target)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.RemoteAddr().String() != c.LocalAddr().String() {
			t.Fatalf("accepted %s, dialled from %s", s.RemoteAddr(), c.LocalAddr())
		}
		go func() { c.Write([]byte("ping")); c.Close() }()
		if b, err := io.ReadAll(s); err != nil || string(b) != "ping" {
			t.Fatalf("read %q, %v", b, err)
		}

		// No thread that entered the namespace serves another goroutine:
		// on the host the address is nobody's.
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if l, err := net.Listen("tcp", net.JoinHostPort(addr, "0")); err == nil {
					l.Close()
					t.Errorf("a goroutine outside listened on %s: the namespace leaked to a pooled thread", addr)
				} else if !errors.Is(err, syscall.EADDRNOTAVAIL) {
					t.Errorf("listen on the host: %v", err)
				}
			}()
		}
		wg.Wait()

		out, err := n.Command(context.Background(), "ip", "-o", "addr", "show", "dev", "lo").CombinedOutput()
		if err != nil || !strings.Contains(string(out), " "+addr+"/32") {
			t.Fatalf("ip addr in the namespace: %v\n%s", err, out)
		}
		if out, _ := exec.Command("ip", "-o", "addr", "show", "dev", "lo").Output(); strings.Contains(string(out), " "+addr+"/") {
			t.Fatalf("the host's lo holds %s", addr)
		}
	})
	if name == "" {
		return // skipped
	}
	if _, err := os.Stat("/run/netns/" + name); !os.IsNotExist(err) {
		t.Errorf("/run/netns/%s is still there: %v", name, err)
	}
}
