package hostfile

// Red team of Guard.Hold: Guard.Hold (held folder descriptors shared by several
// goroutines, as project.Write uses it) and ReadFile's fstat-sized read.
// Each test is an attack by a server that can write the grant; it asserts
// nothing outside the grant is written, read back as ours, or removed, and
// that mcpolicy does not hang or leak descriptors.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func rt2FDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// rt2Write is project.Write's per-file step (read back, write if it
// changed), in parallel over names, through one held guard.
func rt2Write(g *Guard, dir string, names []string, data func(string) []byte, workers int) []error {
	errs := make([]error, len(names))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(names) {
					return
				}
				target := filepath.Join(dir, filepath.FromSlash(names[i]))
				if g.Holds(target, data(names[i])) {
					continue
				}
				errs[i] = g.WriteFile(target, data(names[i]), 0o644)
			}
		})
	}
	wg.Wait()
	return errs
}

// Attack 1: while 8 goroutines write, read back and remove through a held
// guard, the server keeps swapping each held folder (and the output folder
// above them) for a symlink out of the grant and back, including before
// the first open of a folder (Hold/Release every round, so the hold is
// taken mid-race).
func TestRedteamHoldHeldSwapRace(t *testing.T) {
	grant, outside, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy")
	subs := []string{"plan", "docker", "bwrap"}
	for _, s := range subs {
		os.MkdirAll(filepath.Join(out, s), 0o755)
	}
	// The outside mirrors the artefact layout, so a followed link lands on
	// an existing folder and an existing victim file name.
	for _, s := range subs {
		os.MkdirAll(filepath.Join(outside, s), 0o755)
		os.WriteFile(filepath.Join(outside, s, "a.json"), []byte("mine\n"), 0o644)
	}
	swap := func(p string) {
		moved := p + ".moved"
		if os.Rename(p, moved) == nil {
			os.Symlink(outside, p)
			os.Remove(p)
			os.Rename(moved, p)
		}
	}
	stop := flipper(t, func() {
		for _, s := range subs {
			swap(filepath.Join(out, s))
		}
		swap(out)
	})
	g := NewGuard([]string{grant})
	var wrote, refused atomic.Int64
	rounds := rounds(t) / 20
	for r := 0; r < rounds; r++ {
		g.Hold()
		var names []string
		for _, s := range subs {
			names = append(names, s+"/a.json", s+"/b.json", s+"/.bashrc")
		}
		names = append(names, "manifest.json", ".bashrc")
		for _, err := range rt2Write(g, out, names, func(n string) []byte { return []byte("pwned " + n + "\n") }, 8) {
			if err != nil {
				refused.Add(1)
			} else {
				wrote.Add(1)
			}
		}
		for _, s := range subs {
			if b, err := g.ReadFile(filepath.Join(out, s, "a.json")); err == nil && string(b) == "mine\n" {
				t.Fatalf("read the victim through a held folder")
			}
			g.Remove(filepath.Join(out, s, "a.json"))
		}
		g.Release()
	}
	stop()
	t.Logf("%d written, %d refused", wrote.Load(), refused.Load())
	same(t, victim, "mine\n")
	noNewFiles(t, outside, ".bashrc", "plan", "docker", "bwrap")
	for _, s := range subs {
		same(t, filepath.Join(outside, s, "a.json"), "mine\n")
		noNewFiles(t, filepath.Join(outside, s), "a.json")
	}
}

// Attack 2: the held folder, once held, is renamed to the name of
// another held folder's path, the other moved away, a link planted: files
// of one kind land in the other's folder, all inside the grant; nothing
// outside. (Behaviour that did not exist before Hold: a fresh walk would
// have refused the link; here the build succeeds into the moved folders.)
func TestRedteamHoldHeldCrossSwap(t *testing.T) {
	grant, outside, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy")
	a, b := filepath.Join(out, "docker"), filepath.Join(out, "plan")
	g := NewGuard([]string{grant})
	g.Hold()
	defer g.Release()
	for _, d := range []string{a, b} {
		if err := g.WriteFile(filepath.Join(d, "x.json"), []byte("1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a -> elsewhere, b -> a, link at b to outside.
	if err := os.Rename(a, filepath.Join(grant, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(b, a); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, b); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{a, b} {
		if err := g.WriteFile(filepath.Join(d, ".bashrc"), []byte("pwned\n"), 0o644); err != nil {
			t.Logf("%s: %v", d, err)
		}
		g.Remove(filepath.Join(d, "x.json"))
	}
	same(t, victim, "mine\n")
	noNewFiles(t, outside, ".bashrc")
	// Where they went: the held descriptors, wherever the server put them.
	same(t, filepath.Join(grant, "elsewhere", ".bashrc"), "pwned\n")
	same(t, filepath.Join(a, ".bashrc"), "pwned\n")
	if fi, err := os.Lstat(b); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the planted link at %s is gone: %v", b, err)
	}
	t.Logf("build wrote through held descriptors while %s is a symlink to %s: no error, no warning", b, outside)
}

// Attack 3: more folders than maxHeld (the server creates extra files in
// 200 folders under the output folder: build's Remove phase reaches each),
// one of the folders past the 64th a link out of the grant; writes in
// parallel. Descriptors stay bounded, Release closes all, the link is
// refused.
func TestRedteamHoldManyFolders(t *testing.T) {
	grant, outside, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy")
	before := rt2FDs(t)
	g := NewGuard([]string{grant})
	g.Hold()
	var names []string
	for i := range 200 {
		names = append(names, fmt.Sprintf("d%03d/f.json", i))
	}
	// The link: planted at a folder name past the 64 held ones.
	os.MkdirAll(out, 0o755)
	if err := os.Symlink(outside, filepath.Join(out, "d150")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "f.json"), []byte("mine\n"), 0o644)
	var maxFDs atomic.Int64
	stop := flipper(t, func() {
		if es, err := os.ReadDir("/proc/self/fd"); err == nil && int64(len(es)) > maxFDs.Load() {
			maxFDs.Store(int64(len(es)))
		}
	})
	errs := rt2Write(g, out, names, func(n string) []byte { return []byte(n) }, 8)
	stop()
	for i, err := range errs {
		if names[i] == "d150/f.json" {
			wantTampered(t, err, "symlink")
		} else if err != nil {
			t.Errorf("%s: %v", names[i], err)
		}
	}
	// Remove through the guard too (the Remove phase), again in parallel.
	var wg sync.WaitGroup
	for i := range names {
		wg.Go(func() { g.Remove(filepath.Join(out, names[i])) })
	}
	wg.Wait()
	g.mu.Lock()
	held := len(g.held)
	g.mu.Unlock()
	if held > maxHeld {
		t.Errorf("%d folders held, more than %d", held, maxHeld)
	}
	g.Release()
	if n := rt2FDs(t); n != before {
		t.Errorf("%d descriptors after Release, %d before Hold", n, before)
	}
	t.Logf("held %d, peak descriptors %d (before %d)", held, maxFDs.Load(), before)
	same(t, victim, "mine\n")
	same(t, filepath.Join(outside, "f.json"), "mine\n")
	noNewFiles(t, outside, ".bashrc", "f.json")
}

// Attack 4: what a server plants at artefact names in a held folder: a
// symlink to the victim, a hard link to the victim, a FIFO, a socket, a
// folder, a file growing forever. The parallel read-back/write never
// writes the victim, never hangs.
func TestRedteamHoldPlantedArtefacts(t *testing.T) {
	grant, outside, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy", "docker")
	os.MkdirAll(out, 0o755)
	os.Symlink(victim, filepath.Join(out, "link.json"))
	hardOK := os.Link(victim, filepath.Join(out, "hard.json")) == nil
	syscall.Mkfifo(filepath.Join(out, "fifo.json"), 0o644)
	if l, err := net.Listen("unix", filepath.Join(out, "sock.json")); err == nil {
		defer l.Close()
	}
	os.Mkdir(filepath.Join(out, "dir.json"), 0o755)
	os.WriteFile(filepath.Join(out, "dir.json", "inner"), []byte("x"), 0o644)
	// The victim's own content as an artefact: a read-back that matched
	// would skip the write (harmless), one that wrote would replace the link.
	names := []string{"link.json", "hard.json", "fifo.json", "sock.json", "dir.json", "ok.json"}
	g := NewGuard([]string{grant})
	g.Hold()
	done := make(chan []error, 1)
	go func() {
		done <- rt2Write(g, filepath.Dir(out), prefix("docker/", names), func(string) []byte { return []byte("mine\n") }, 4)
	}()
	var errs []error
	select {
	case errs = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("parallel write hangs on a planted artefact")
	}
	g.Release()
	for i, err := range errs {
		t.Logf("%s: %v", names[i], err)
	}
	same(t, victim, "mine\n")
	if hardOK {
		// The hard link was read back ("mine\n" == the artefact), so no
		// write: the victim is not replaced but stays linked; had the bytes
		// differed, rename would replace the name, not write the victim.
		fi, _ := os.Stat(victim)
		t.Logf("victim links after: %d", fi.Sys().(*syscall.Stat_t).Nlink)
	}
	noNewFiles(t, outside, ".bashrc")
	fi, err := os.Stat(victim)
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("victim mode changed: %v %v", fi.Mode(), err)
	}
}

func prefix(p string, names []string) []string {
	var out []string
	for _, n := range names {
		out = append(out, p+n)
	}
	return out
}

// Attack 5: ReadFile of a file whose size changes under it, through a
// held folder, from several goroutines: shrinks to 0, grows past maxRead,
// is swapped for a sparse file of exactly maxRead, for a link, for a FIFO.
// Never more than maxRead bytes, never a panic, never the victim's bytes.
func TestRedteamHoldReadSizeRace(t *testing.T) {
	if testing.Short() {
		t.Skip("reads many MiB")
	}
	grant, _, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy")
	os.MkdirAll(out, 0o755)
	f := filepath.Join(out, "a.json")
	os.WriteFile(f, []byte("x"), 0o644)
	var i atomic.Int64
	stop := flipper(t, func() {
		switch i.Add(1) % 6 {
		case 0:
			os.Truncate(f, 0)
		case 1:
			os.Truncate(f, maxRead) // sparse, at the limit
		case 2:
			os.Truncate(f, maxRead+4096) // past it
		case 3:
			os.Remove(f)
			os.Symlink(victim, f)
		case 4:
			os.Remove(f)
			syscall.Mkfifo(f, 0o644)
		case 5:
			os.Remove(f)
			os.WriteFile(f, []byte("small"), 0o644)
		}
	})
	g := NewGuard([]string{grant})
	g.Hold()
	var wg sync.WaitGroup
	var reads, big atomic.Int64
	deadline := time.Now().Add(3 * time.Second)
	for range 2 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				b, err := g.ReadFile(f)
				if err != nil {
					continue
				}
				reads.Add(1)
				if len(b) > maxRead {
					t.Errorf("read %d bytes, over %d", len(b), maxRead)
				}
				if string(b) == "mine\n" {
					t.Errorf("read the victim through a link")
				}
				if len(b) > 1<<20 {
					big.Add(1)
				}
			}
		})
	}
	wg.Wait()
	stop()
	g.Release()
	t.Logf("%d reads succeeded, %d of them over 1 MiB", reads.Load(), big.Load())
	same(t, victim, "mine\n")
}

// Attack 6: the server deletes (rmdir) the held folder mid-build. With a
// fresh walk per file (before Hold), the next WriteFile recreated the
// folder and succeeded; through a held descriptor of a deleted folder,
// every later file of that folder fails. A behaviour change (availability,
// not an escape): the server could fail the build anyway (a planted link
// is refused), and nothing is written elsewhere.
func TestRedteamHoldHeldFolderDeleted(t *testing.T) {
	grant, outside, _ := setup(t)
	out := filepath.Join(grant, ".mcpolicy", "docker")
	g := NewGuard([]string{grant})
	g.Hold()
	if err := g.WriteFile(filepath.Join(out, "a.json"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(out)
	err := g.WriteFile(filepath.Join(out, "b.json"), []byte("b"), 0o644)
	t.Logf("held, folder deleted: %v", err)
	g.Release()
	err2 := g.WriteFile(filepath.Join(out, "b.json"), []byte("b"), 0o644)
	t.Logf("not held (a fresh walk, as before Hold): %v", err2)
	if err != nil && err2 == nil {
		t.Logf("BEHAVIOUR CHANGE: a held folder deleted fails the rest of its files; a fresh walk recreates it")
	}
	noNewFiles(t, outside, ".bashrc")
}

// Attack 7: the grant root itself is the output folder's parent and the
// server swaps the *grant-relative* path so the first open of a folder
// (the one that is held for the rest of the build) races a link. A
// resolved hold is then reused for every later file: if the first open
// ever followed a link, all later files would go outside. Many rounds of
// Hold/first-open/Release.
func TestRedteamHoldFirstOpenRace(t *testing.T) {
	grant, outside, victim := setup(t)
	d := filepath.Join(grant, "out", "docker")
	os.MkdirAll(d, 0o755)
	stop := flipper(t, func() {
		os.Rename(filepath.Join(grant, "out"), filepath.Join(grant, "out.real"))
		os.Symlink(outside, filepath.Join(grant, "out"))
		os.Remove(filepath.Join(grant, "out"))
		os.Rename(filepath.Join(grant, "out.real"), filepath.Join(grant, "out"))
	})
	g := NewGuard([]string{grant})
	for range rounds(t) / 3 {
		g.Hold()
		g.ReadFile(filepath.Join(d, ".bashrc")) // first open: create=false
		for range 3 {
			g.WriteFile(filepath.Join(d, ".bashrc"), []byte("pwned\n"), 0o644)
		}
		g.Release()
	}
	stop()
	same(t, victim, "mine\n")
	noNewFiles(t, outside, ".bashrc")
}

// Attack 8: names a server could make the Remove phase pass (listFiles
// lists what it finds under the output folder): a name with "..",
// control characters, very deep folders. Remove never reaches outside.
func TestRedteamHoldRemoveOddNames(t *testing.T) {
	grant, outside, victim := setup(t)
	out := filepath.Join(grant, ".mcpolicy")
	deep := out
	for range 300 {
		deep = filepath.Join(deep, "a")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(deep, "x"), nil, 0o644)
	os.Symlink(outside, filepath.Join(out, "a", "a", "esc"))
	g := NewGuard([]string{grant})
	g.Hold()
	before := rt2FDs(t)
	if err := g.Remove(filepath.Join(deep, "x")); err != nil {
		t.Error(err)
	}
	wantTampered(t, g.Remove(filepath.Join(out, "a", "a", "esc", ".bashrc")), "symlink")
	wantTampered(t, g.Remove(filepath.Join(out, "a", "a", "esc", "..", "esc", ".bashrc")), "symlink")
	g.Remove(filepath.Join(out, "\x1b[2J", ".bashrc"))
	after := rt2FDs(t)
	g.Release()
	t.Logf("descriptors while held: %d -> %d", before, after)
	same(t, victim, "mine\n")
	if _, err := os.Stat(filepath.Join(outside, ".bashrc")); err != nil {
		t.Fatal("victim removed")
	}
	if strings.Contains(fmt.Sprint(g.held), "esc") {
		t.Error("a refused folder stayed held")
	}
}

// Attack 9: every artefact name a sparse file of exactly maxRead bytes
// (not refused by size: it is at the bound). ReadFile would read each
// whole, and project.Write reads back on every core at once: 128 MiB of
// heap with one reader, 448 MiB with four (red team). Holds reads nothing
// of a file whose size is not the artefact's.
func TestRedteamHoldSparseMemory(t *testing.T) {
	grant, _, _ := setup(t)
	out := filepath.Join(grant, ".mcpolicy", "docker")
	os.MkdirAll(out, 0o755)
	var names []string
	for i := range 8 {
		n := fmt.Sprintf("s%d.json", i)
		f, err := os.Create(filepath.Join(out, n))
		if err != nil {
			t.Fatal(err)
		}
		f.Truncate(maxRead)
		f.Close()
		names = append(names, "docker/"+n)
	}
	var peak atomic.Uint64
	stop := flipper(t, func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > peak.Load() {
			peak.Store(ms.HeapAlloc)
		}
		time.Sleep(time.Millisecond)
	})
	for _, workers := range []int{1, 4} {
		runtime.GC()
		peak.Store(0)
		g := NewGuard([]string{grant})
		g.Hold()
		start := time.Now()
		errs := rt2Write(g, filepath.Dir(out), names, func(string) []byte { return []byte("{}\n") }, workers)
		g.Release()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
		time.Sleep(5 * time.Millisecond)
		t.Logf("8 sparse %d MiB artefacts, %d reader(s): %v, peak heap %d MiB", maxRead>>20, workers, time.Since(start), peak.Load()>>20)
		if p := peak.Load(); p > 32<<20 {
			t.Errorf("%d readers: the heap peaked at %d MiB reading back planted sparse files", workers, p>>20)
		}
		// Put them back (the write replaced them with "{}\n").
		for _, n := range names {
			os.Truncate(filepath.Join(filepath.Dir(out), n), maxRead)
		}
	}
	stop()
}
