package hostfile

// Red-team tests: a server with a read-write grant (the project) plants or
// races what mcpolicy is about to write, read, remove or chmod. Each test
// asserts the attack fails: nothing outside the grant is written,
// truncated, chmod'ed or removed, and mcpolicy does not hang.

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// flipper runs f in a loop on its own goroutine until the returned stop is
// called.
func flipper(t *testing.T, f func()) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			f()
		}
	}()
	return func() { done.Store(true); wg.Wait() }
}

func rounds(t *testing.T) int {
	if testing.Short() {
		return 1500
	}
	return 6000
}

// noNewFiles fails if outside holds anything but want.
func noNewFiles(t *testing.T, outside string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(outside)
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]bool{}
	for _, w := range want {
		ok[w] = true
	}
	for _, e := range entries {
		if !ok[e.Name()] {
			t.Errorf("%s: written outside the grant", filepath.Join(outside, e.Name()))
		}
	}
}

// A folder on the way flipped between a real folder and a link out of the
// grant while WriteFile, ReadFile and Remove run: the walk holds
// descriptors and opens each component O_NOFOLLOW, so no call ever lands
// outside; each either writes inside the grant or is refused.
func TestRedteamDirSymlinkFlipRace(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	grant, outside, victim := setup(t)
	d, real := filepath.Join(grant, "ev"), filepath.Join(grant, "ev.real")
	nested := filepath.Join(grant, "a", "b")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(d, 0o755)
	stop := flipper(t, func() {
		// real folder -> link -> real folder, at two depths.
		os.Rename(d, real)
		os.Symlink(outside, d)
		os.Rename(filepath.Join(grant, "a"), filepath.Join(grant, "a.real"))
		os.Symlink(outside, filepath.Join(grant, "a"))
		os.Remove(d)
		os.Rename(real, d)
		os.Remove(filepath.Join(grant, "a"))
		os.Rename(filepath.Join(grant, "a.real"), filepath.Join(grant, "a"))
	})
	g := NewGuard([]string{grant})
	var wrote, refused int
	for i := 0; i < rounds(t); i++ {
		for _, f := range []string{filepath.Join(d, ".bashrc"), filepath.Join(d, "evidence.md"), filepath.Join(nested, ".bashrc")} {
			if err := g.WriteFile(f, []byte("pwned\n"), 0o644); err != nil {
				refused++
			} else {
				wrote++
			}
		}
		if b, err := g.ReadFile(filepath.Join(d, ".bashrc")); err == nil && string(b) == "mine\n" {
			t.Fatal("ReadFile read the victim through a flipped folder")
		}
		g.Remove(filepath.Join(d, ".bashrc"))
		g.Remove(filepath.Join(filepath.Join(grant, "a"), ".bashrc"))
	}
	stop()
	t.Logf("%d written inside, %d refused", wrote, refused)
	same(t, victim, "mine\n")
	noNewFiles(t, outside, ".bashrc")
	if refused == 0 {
		t.Log("the race never hit a link (slow flipper?)")
	}
}

// The file itself flipped between nothing, a regular file and a link to the
// victim between WriteFile's Fstatat and its Renameat: the rename replaces
// the link, nothing is written through it.
func TestRedteamFinalSymlinkRace(t *testing.T) {
	grant, _, victim := setup(t)
	f := filepath.Join(grant, "evidence.md")
	stop := flipper(t, func() {
		os.Remove(f)
		os.Symlink(victim, f)
		os.Remove(f)
		os.Link(victim, f) // a hard link too (same file system here)
		os.Remove(f)
		syscall.Mkfifo(f, 0o644)
	})
	for i := 0; i < rounds(t); i++ {
		WriteFile(f, []byte("pwned\n"), 0o644, []string{grant})
	}
	stop()
	same(t, victim, "mine\n")
}

// The temporary file: its name is not guessable, so one planted ahead (a
// FIFO, a socket, a link) is not hit; one swapped in after it was made (the
// server watches the folder) is renamed into place as a link or FIFO,
// never written through.
func TestRedteamTempName(t *testing.T) {
	grant, _, victim := setup(t)
	f := filepath.Join(grant, "evidence.md")
	// Planted ahead, under every name a lazy guess would try.
	for _, n := range []string{".evidence.md.tmp-", ".evidence.md.tmp-0000000000000000", ".evidence.md.tmp"} {
		os.Symlink(victim, filepath.Join(grant, n))
	}
	syscall.Mkfifo(filepath.Join(grant, ".evidence.md.tmp-1"), 0o644)
	ln, err := net.Listen("unix", filepath.Join(grant, ".evidence.md.tmp-2"))
	if err == nil {
		defer ln.Close()
	}
	if err := WriteFile(f, []byte("r\n"), 0o644, []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, f, "r\n")
	// Two writes never share a temporary name.
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		r := random()
		if seen[r] || len(r) != 16 {
			t.Fatalf("temporary suffix %q repeats or is short", r)
		}
		seen[r] = true
	}
	// Swapped after creation: a watcher replaces every temporary file with
	// a link to the victim (or a FIFO) as soon as it sees it.
	stop := flipper(t, func() {
		entries, _ := os.ReadDir(grant)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".evidence.md.tmp-") && e.Type().IsRegular() {
				p := filepath.Join(grant, e.Name())
				os.Remove(p)
				if len(e.Name())%2 == 0 {
					os.Symlink(victim, p)
				} else {
					syscall.Mkfifo(p, 0o644)
				}
			}
		}
	})
	swapped := 0
	for i := 0; i < rounds(t)/3; i++ {
		WriteFile(f, []byte("pwned\n"), 0o644, []string{grant})
		if fi, err := os.Lstat(f); err == nil && !fi.Mode().IsRegular() {
			swapped++
			os.Remove(f)
		}
	}
	stop()
	t.Logf("%d temporary files swapped before the rename", swapped)
	same(t, victim, "mine\n")
}

// A file, FIFO, socket or link planted where WriteFile must create a folder
// (create=true): refused, promptly, and nothing made outside.
func TestRedteamPlantedAtFolderName(t *testing.T) {
	grant, outside, victim := setup(t)
	mk := map[string]func(p string) error{
		"file": func(p string) error { return os.WriteFile(p, nil, 0o644) },
		"fifo": func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"link": func(p string) error { return os.Symlink(outside, p) },
		"sock": func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				t.Cleanup(func() { l.Close() })
			}
			return err
		},
	}
	for kind, make := range mk {
		p := filepath.Join(grant, "out-"+kind)
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		done := make2(func() error {
			return WriteFile(filepath.Join(p, "sub", ".bashrc"), []byte("pwned\n"), 0o644, []string{grant})
		})
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s at a folder's name: written", kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s at a folder's name: WriteFile hangs", kind)
		}
	}
	same(t, victim, "mine\n")
	noNewFiles(t, outside, ".bashrc")
}

func make2(f func() error) <-chan error {
	c := make(chan error, 1)
	go func() { c <- f() }()
	return c
}

// ReadFile of a FIFO or a socket planted where mcpolicy reads back an
// artefact or a client config: refused, never blocks.
func TestRedteamReadSpecialFiles(t *testing.T) {
	grant, outside, _ := setup(t)
	fifo := filepath.Join(grant, "fifo")
	syscall.Mkfifo(fifo, 0o644)
	sock := filepath.Join(grant, "sock")
	if l, err := net.Listen("unix", sock); err == nil {
		defer l.Close()
	}
	// Outside the grant too (a user's FIFO named by a config path).
	ofifo := filepath.Join(outside, "fifo")
	syscall.Mkfifo(ofifo, 0o644)
	for _, p := range []string{fifo, sock, ofifo} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(p, []string{grant}); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s read", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) hangs", p)
		}
	}
}

// A huge (sparse) file planted where build reads back its artefact, or a
// file the server keeps appending to: ReadFile must not read it all into
// memory.
func TestRedteamReadHuge(t *testing.T) {
	grant, _, _ := setup(t)
	f := filepath.Join(grant, "huge.json")
	fd, err := os.Create(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := fd.Truncate(maxRead + 1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	fd.Close()
	if b, err := ReadFile(f, []string{grant}); err == nil {
		t.Fatalf("read %d bytes of a planted huge file", len(b))
	}
	// At the limit it is still read (a big but sane file).
	os.Truncate(f, maxRead)
	if b, err := ReadFile(f, []string{grant}); err != nil || len(b) != maxRead {
		t.Fatalf("file at the limit: %d bytes, %v", len(b), err)
	}
	os.Truncate(f, 1<<20)
	// Growing while read: a writer appending as fast as it can.
	w, err := os.OpenFile(f, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	chunk := make([]byte, 1<<20)
	stop := flipper(t, func() {
		if fi, _ := w.Stat(); fi != nil && fi.Size() > 3*maxRead {
			w.Truncate(0)
		}
		w.Write(chunk)
	})
	defer stop()
	for i := 0; i < 20; i++ {
		if b, err := ReadFile(f, []string{grant}); err == nil && len(b) > maxRead {
			t.Fatalf("read %d bytes, over the %d limit", len(b), maxRead)
		}
	}
}

// The grant named through the user's link, and a grant below a link: both
// are recognised by device and inode, so links inside are refused however
// the path reaches them.
func TestRedteamGuardNamedThroughLink(t *testing.T) {
	grant, outside, victim := setup(t)
	base := filepath.Dir(grant)
	link := filepath.Join(base, "proj-link")
	os.Symlink(grant, link)
	os.Symlink(outside, filepath.Join(grant, "ev"))
	for _, untrusted := range [][]string{{link}, {grant}, {link + "/"}, {grant + "/."}} {
		for _, p := range []string{filepath.Join(grant, "ev", ".bashrc"), filepath.Join(link, "ev", ".bashrc")} {
			wantTampered(t, WriteFile(p, []byte("pwned\n"), 0o644, untrusted), "symlink")
			wantTampered(t, Remove(p, untrusted), "symlink")
		}
	}
	// A relative path from inside the grant.
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(grant)
	wantTampered(t, WriteFile("ev/.bashrc", []byte("pwned\n"), 0o644, []string{"."}), "symlink")
	same(t, victim, "mine\n")
}

// `..` in a path: cleaned lexically before the walk, so a link inside the
// grant followed by `..` is never resolved (grant/evil/../x is grant/x).
func TestRedteamDotDot(t *testing.T) {
	grant, outside, victim := setup(t)
	os.MkdirAll(filepath.Join(outside, "deep", "er"), 0o755)
	os.Symlink(filepath.Join(outside, "deep", "er"), filepath.Join(grant, "evil"))
	if err := WriteFile(filepath.Join(grant, "evil", "..", ".bashrc"), []byte("x\n"), 0o644, []string{grant}); err != nil {
		t.Fatal(err)
	}
	same(t, filepath.Join(grant, ".bashrc"), "x\n")
	if _, err := os.Stat(filepath.Join(outside, "deep", ".bashrc")); err == nil {
		t.Error("written through evil/..")
	}
	wantTampered(t, WriteFile(filepath.Join(grant, "evil", "..", "evil", "x"), []byte("x\n"), 0o644, []string{grant}), "symlink")
	same(t, victim, "mine\n")
}

// Remove: a link to a folder or file is removed itself; a folder at the
// name is not removed (nor emptied).
func TestRedteamRemove(t *testing.T) {
	grant, outside, victim := setup(t)
	os.Symlink(outside, filepath.Join(grant, "dl"))
	if err := Remove(filepath.Join(grant, "dl"), []string{grant}); err != nil {
		t.Fatal(err)
	}
	os.Link(victim, filepath.Join(grant, "hl"))
	Remove(filepath.Join(grant, "hl"), []string{grant})
	os.MkdirAll(filepath.Join(grant, "dir"), 0o755)
	os.WriteFile(filepath.Join(grant, "dir", "keep"), nil, 0o644)
	if err := Remove(filepath.Join(grant, "dir"), []string{grant}); err == nil {
		t.Error("a folder removed")
	}
	same(t, victim, "mine\n")
	if _, err := os.Stat(filepath.Join(grant, "dir", "keep")); err != nil {
		t.Error(err)
	}
}

// Chmod of a socket mcpolicy made, swapped (by something that can write its
// folder) for a hard link to a file of the user's: the mode of the user's
// file must not change. A hard link is not a symlink, so O_NOFOLLOW alone
// does not see it.
func TestRedteamChmodHardLink(t *testing.T) {
	_, outside, victim := setup(t)
	os.Chmod(victim, 0o600)
	dir := t.TempDir()
	sock := filepath.Join(dir, "host.sock")
	if err := os.Link(victim, sock); err != nil {
		t.Skip("no hard links across these folders:", err)
	}
	err := Chmod(sock, 0o777)
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the user's file chmod'ed through a hard link: %v (err %v)", fi.Mode().Perm(), err)
	}
	wantTampered(t, err, "hard link")
	_ = outside
}

// Chmod racing a swap of the socket for a symlink (and back): the victim's
// mode never changes.
func TestRedteamChmodSwapRace(t *testing.T) {
	_, _, victim := setup(t)
	os.Chmod(victim, 0o600)
	dir := t.TempDir()
	sock := filepath.Join(dir, "host.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	aside := filepath.Join(dir, "aside")
	stop := flipper(t, func() {
		os.Rename(sock, aside)
		os.Symlink(victim, sock)
		os.Remove(sock)
		os.Rename(aside, sock)
	})
	var refused int
	for i := 0; i < rounds(t); i++ {
		var te *TamperedError
		if err := Chmod(sock, 0o777); errors.As(err, &te) {
			refused++
		}
	}
	stop()
	if fi, _ := os.Stat(victim); fi.Mode().Perm() != 0o600 {
		t.Fatalf("victim chmod'ed: %v", fi.Mode().Perm())
	}
	t.Logf("%d refused", refused)
}
