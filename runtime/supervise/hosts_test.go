package supervise

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/runtime/egress"
)

// TestHostsFileOutsideGrants: --hosts names where allowed hosts are, and
// its addresses are not refused as this machine's own; a file a server
// can write is refused however it is named (a red team: a symlink and a
// hard link outside the grant to a file inside it were read, and the
// server reached a host-only service).
func TestHostsFileOutsideGrants(t *testing.T) {
	grant := t.TempDir()
	outside := t.TempDir()
	inside := filepath.Join(grant, "hosts")
	os.WriteFile(inside, []byte("192.0.2.2 api.test\n"), 0o644)
	link := filepath.Join(outside, "link")
	os.Symlink(inside, link)
	inside2 := filepath.Join(grant, "hosts2")
	os.WriteFile(inside2, []byte("192.0.2.2 api.test\n"), 0o644)
	hard := filepath.Join(outside, "hard")
	if err := os.Link(inside2, hard); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(outside, "fifo") // os.Open waited for a writer, for ever
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(outside, "own")
	os.WriteFile(own, []byte("203.0.113.7 api.test\n"), 0o644)
	for _, c := range []struct {
		file string
		want string // "" for read
	}{
		{inside, "lies inside"},
		{link, "lies inside"},
		{hard, "hard links"},
		{fifo, "not a regular file"},
		{own, ""},
	} {
		var table egress.Hosts
		var err error
		done := make(chan struct{})
		go func() { table, err = ReadHosts(c.file, []string{grant}); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: ReadHosts did not return", filepath.Base(c.file))
		}
		switch {
		case c.want == "" && (err != nil || len(table) != 1):
			t.Errorf("%s: %v %v", filepath.Base(c.file), table, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want refused (%s)", filepath.Base(c.file), err, c.want)
		}
	}
}
