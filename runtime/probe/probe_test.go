package probe

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestResultsNameTheErrno(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("x"), 0o644)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := l.Addr().String()
	l2, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := l2.Addr().String()
	l2.Close()
	defer l.Close()

	cases := []struct {
		attempt string
		want    string
	}{
		{"read:" + file, "ok"},
		{"read:" + filepath.Join(dir, "missing"), "ENOENT"},
		{"write:" + file, "ok"},
		{"write:" + filepath.Join(dir, "missing"), "ENOENT"},
		{"create:" + filepath.Join(dir, "new"), "ok"},
		{"create:" + file, "EEXIST"},
		{"list:" + dir, "ok"},
		{"list:" + file, "ENOTDIR"},
		{"connect:" + open, "ok"},
		{"connect:" + closed, "ECONNREFUSED"},
	}
	for _, c := range cases {
		a, err := ParseAttempt(c.attempt)
		if err != nil {
			t.Fatal(err)
		}
		if got := Run(a).Result; got != c.want {
			t.Errorf("%s: got %s, want %s", c.attempt, got, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !os.IsNotExist(err) {
		t.Errorf("create left its file behind")
	}
	for _, bad := range []string{"read", "read:", "fly:/x"} {
		if _, err := ParseAttempt(bad); err == nil {
			t.Errorf("ParseAttempt(%q) accepted", bad)
		}
	}
}

// TestFIFODoesNotBlock: a FIFO a server put where the probe reads or
// writes held prove forever (a red team: the read-write mount's file
// swapped for one between runs). Opening is the answer; nothing waits for
// a writer or a reader.
func TestFIFODoesNotBlock(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "a.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, op := range []Op{Read, Write} {
		done := make(chan Result, 1)
		go func() { done <- Run(Attempt{op, fifo}) }()
		select {
		case r := <-done:
			t.Logf("%s on a FIFO: %s", op, r.Result)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s on a FIFO blocked", op)
		}
	}
}
