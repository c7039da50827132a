package supervise

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestSweepStale: a killed supervisor's folder (old, nobody answering) is
// removed; a live proxy's folder, a folder just made and (as root) another
// user's are kept, and the live proxy is not connected to (Linux).
func TestSweepStale(t *testing.T) {
	tmp, err := os.MkdirTemp("/var/tmp", "sweep-") // short: socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	old := time.Now().Add(-time.Hour)
	mk := func(name string) string {
		d := filepath.Join(tmp, name)
		os.Mkdir(d, 0o711)
		return d
	}
	dead := mk("mcpolicy-egress-dead")
	deadSock, _ := net.Listen("unix", filepath.Join(dead, "egress.sock"))
	deadSock.(*net.UnixListener).SetUnlinkOnClose(false)
	deadSock.Close() // the socket file stays, nobody listens: a SIGKILLed supervisor
	empty := mk("mcpolicy-egress-empty")
	live := mk("mcpolicy-egress-live  two spaces") // a TMPDIR may hold them (red team)
	ln, err := net.Listen("unix", filepath.Join(live, "egress.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var dialed atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			dialed.Add(1)
			c.Close()
		}
	}()
	fresh := mk("mcpolicy-egress-fresh")
	other := mk("not-ours")
	want := map[string]bool{dead: false, empty: false, live: true, fresh: true, other: true}
	if os.Geteuid() == 0 {
		theirs := mk("mcpolicy-egress-theirs")
		if err := os.Chown(theirs, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		want[theirs] = true
	}
	for d := range want {
		if d != fresh {
			os.Chtimes(d, old, old)
		}
	}

	sweepStale(tmp)
	for d, want := range want {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	// A live proxy is not connected to: it would refuse and log the sweep
	// as a connection from outside its sandbox (red team).
	// A connection of ours after it is accepted after any of the sweep's.
	c, err := net.Dial("unix", filepath.Join(live, "egress.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	for deadline := time.Now().Add(10 * time.Second); dialed.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := dialed.Load() - 1; n != 0 && runtime.GOOS == "linux" {
		t.Errorf("the sweep connected to a live proxy %d times", n)
	}
}
