package supervise

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketParent: the socket's folder goes under $XDG_RUNTIME_DIR only
// when that is a real directory of ours no one else may enter; otherwise
// under TMPDIR (TestEgressSocketPeers checks the folder and the socket
// made there).
func TestSocketParent(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "parent-") // short: socket paths
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mk := func(name string, mode os.FileMode) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, mode)
		return d
	}
	good := mk("run", 0o700)
	open := mk("open", 0o755)
	link := filepath.Join(base, "link")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	long := mk(strings.Repeat("l", maxParent), 0o700)
	tmp := tempParent()
	cases := map[string]string{
		"":             tmp,
		good:           good,
		good + "/":     good,
		open:           tmp, // others may enter
		link:           tmp, // a symlink: not the directory the spec promises
		"run":          tmp, // relative
		long:           tmp, // no room for the socket's path
		base + "/gone": tmp,
		good + "/.":    good,
	}
	if os.Geteuid() == 0 {
		theirs := mk("theirs", 0o700)
		if err := os.Chown(theirs, 12345, 12345); err != nil {
			t.Fatal(err)
		}
		cases[theirs] = tmp // another user's
	}
	for xdg, want := range cases {
		t.Setenv("XDG_RUNTIME_DIR", xdg)
		if got := socketParent(); got != want {
			t.Errorf("XDG_RUNTIME_DIR=%q: the socket goes under %q, want %q", xdg, got, want)
		}
	}

}
