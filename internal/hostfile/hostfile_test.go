package hostfile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func setup(t *testing.T) (grant, outside, victim string) {
	t.Helper()
	base := t.TempDir()
	grant, outside = filepath.Join(base, "project"), filepath.Join(base, "home")
	for _, d := range []string{grant, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	victim = filepath.Join(outside, ".bashrc")
	if err := os.WriteFile(victim, []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return grant, outside, victim
}

func same(t *testing.T, f, want string) {
	t.Helper()
	if b, err := os.ReadFile(f); err != nil || string(b) != want {
		t.Fatalf("%s: %q, %v; want %q", f, b, err, want)
	}
}

func wantTampered(t *testing.T, err error, words ...string) {
	t.Helper()
	var te *TamperedError
	if !errors.As(err, &te) {
		t.Fatalf("want a TamperedError, got %v", err)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}

func TestWriteRefusesLinksInsideGrant(t *testing.T) {
	grant, outside, victim := setup(t)
	untrusted := []string{grant}
	// The file itself a link.
	os.Symlink(victim, filepath.Join(grant, "a.md"))
	wantTampered(t, WriteFile(filepath.Join(grant, "a.md"), []byte("x"), 0o644, untrusted), filepath.Join(grant, "a.md"), "symlink", "remove it")
	// A folder on the way a link.
	os.Symlink(outside, filepath.Join(grant, "ev"))
	wantTampered(t, WriteFile(filepath.Join(grant, "ev", ".bashrc"), []byte("x"), 0o644, untrusted), filepath.Join(grant, "ev"), "symlink")
	// Deeper, and through a relative link.
	os.MkdirAll(filepath.Join(grant, "d", "e"), 0o755)
	os.Symlink("../../../home", filepath.Join(grant, "d", "e", "up"))
	wantTampered(t, WriteFile(filepath.Join(grant, "d", "e", "up", ".bashrc"), []byte("x"), 0o644, untrusted), "symlink")
	// A FIFO where the file goes.
	if err := syscall.Mkfifo(filepath.Join(grant, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantTampered(t, WriteFile(filepath.Join(grant, "fifo"), []byte("x"), 0o644, untrusted), "FIFO")
	same(t, victim, "mine\n")
	// The grant reached through the user's own link is still the grant.
	userLink := filepath.Join(outside, "proj")
	os.Symlink(grant, userLink)
	wantTampered(t, WriteFile(filepath.Join(userLink, "ev", ".bashrc"), []byte("x"), 0o644, untrusted), "symlink")
	same(t, victim, "mine\n")
	// A grant below the path's first folder: its links are refused too.
	sub := filepath.Join(outside, "sub")
	os.MkdirAll(sub, 0o755)
	os.Symlink(victim, filepath.Join(sub, "f"))
	wantTampered(t, WriteFile(filepath.Join(sub, "f"), []byte("x"), 0o644, []string{grant, sub}), "symlink")
	same(t, victim, "mine\n")
}

func TestWriteReplacesHardLinkNotItsTarget(t *testing.T) {
	grant, _, victim := setup(t)
	f := filepath.Join(grant, "evidence.md")
	if err := os.Link(victim, f); err != nil {
		t.Skip("no hard links across these folders:", err)
	}
	if err := WriteFile(f, []byte("report\n"), 0o644, []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, victim, "mine\n")
	same(t, f, "report\n")
}

func TestWriteOutsideGrants(t *testing.T) {
	grant, outside, victim := setup(t)
	// The user's own links, outside every grant, are followed on the way.
	os.Symlink(outside, filepath.Join(filepath.Dir(outside), "home-link"))
	f := filepath.Join(filepath.Dir(outside), "home-link", "new", "deeper", "f.json")
	if err := WriteFile(f, []byte("{}\n"), 0o600, []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, filepath.Join(outside, "new", "deeper", "f.json"), "{}\n")
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	// The user's link as the file is replaced (as before), its target kept.
	l := filepath.Join(outside, "cfg.json")
	os.Symlink(victim, l)
	if err := WriteFile(l, []byte("new\n"), 0o644, []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, victim, "mine\n")
	same(t, l, "new\n")
	// Inside a grant, plain files and new folders are written.
	if err := WriteFile(filepath.Join(grant, "evidence", "evidence.md"), []byte("r\n"), 0o644, []string{grant}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(grant, "evidence", "evidence.md"), []byte("r2\n"), 0o644, []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, filepath.Join(grant, "evidence", "evidence.md"), "r2\n")
	entries, _ := os.ReadDir(filepath.Join(grant, "evidence"))
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestRemoveAndReadDoNotFollow(t *testing.T) {
	grant, outside, victim := setup(t)
	os.Symlink(outside, filepath.Join(grant, "out"))
	wantTampered(t, Remove(filepath.Join(grant, "out", ".bashrc"), []string{grant}), "symlink")
	same(t, victim, "mine\n")
	// The link itself is what Remove removes.
	os.Symlink(victim, filepath.Join(grant, "l"))
	if err := Remove(filepath.Join(grant, "l"), []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, victim, "mine\n")
	if err := Remove(filepath.Join(grant, "none", "x"), []string{grant}); err != nil {
		t.Errorf("removing what is not there: %v", err)
	}
	// ReadFile.
	os.Symlink(victim, filepath.Join(grant, "cfg"))
	_, err := ReadFile(filepath.Join(grant, "cfg"), []string{grant})
	wantTampered(t, err, "symlink")
	if _, err := ReadFile(filepath.Join(grant, "nothing", "cfg"), []string{grant}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want ErrNotExist", err)
	}
	if b, err := ReadFile(filepath.Join(outside, ".bashrc"), []string{grant}); err != nil || string(b) != "mine\n" {
		t.Errorf("read outside: %q %v", b, err)
	}
}

// TestChmodNotThroughLink: the socket (or folder) mcpolicy made, swapped
// for a link to a file of the user's before its chmod.
func TestChmodNotThroughLink(t *testing.T) {
	_, outside, victim := setup(t)
	if err := os.Chmod(victim, 0o600); err != nil {
		t.Fatal(err)
	}
	sockDir := t.TempDir()
	sock := filepath.Join(sockDir, "host.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := Chmod(sock, 0o777); err != nil {
		t.Fatalf("chmod of the socket itself: %v", err)
	}
	if fi, _ := os.Lstat(sock); fi.Mode().Perm() != 0o777 {
		t.Errorf("socket mode %v, want 0777", fi.Mode().Perm())
	}
	if err := Chmod(sockDir, 0o755); err != nil {
		t.Fatalf("chmod of the folder: %v", err)
	}
	os.Remove(sock)
	os.Symlink(victim, sock)
	wantTampered(t, Chmod(sock, 0o777), sock, "symlink")
	os.Symlink(outside, filepath.Join(sockDir, "d"))
	wantTampered(t, Chmod(filepath.Join(sockDir, "d"), 0o777), "symlink")
	for f, want := range map[string]os.FileMode{victim: 0o600, outside: 0o755} {
		if fi, _ := os.Stat(f); fi.Mode().Perm() != want {
			t.Errorf("%s: mode changed through a link: %v, want %v", f, fi.Mode().Perm(), want)
		}
	}
}
