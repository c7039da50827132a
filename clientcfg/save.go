package clientcfg

import (
	"bytes"
	"crypto/sha256"
	hexenc "encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// A client config belongs to the user and to the client, which rewrites it
// while it runs: Save never drops what another writer put there between
// its read and its rename, keeps the file's mode, owner and links, and
// keeps the bytes it replaced (see docs/clients.md, "How --write writes").

// SaveOptions is one write of a client file.
type SaveOptions struct {
	File      string
	Untrusted []string // the folders a server may write (hostfile)
	// Edit returns the new content for the file's current content (nil
	// when it is absent); it is called again when the file changed
	// under it.
	Edit func(src []byte) ([]byte, error)
	// StateDir holds the backups ("": DefaultStateDir()).
	StateDir string
}

// Saved is what Save did.
type Saved struct {
	File    string // the file written: a symlink's target
	Backup  string // where the replaced bytes went ("": there were none)
	Changed bool   // false: the content was already what Edit returns
}

// Retries bounds how often Save re-reads and re-edits a file that changed
// under it before it gives up.
const Retries = 8

// Backups is how many generations of a file Save keeps.
const Backups = 20

// ErrChangedUnder is a file another program kept rewriting while Save
// wrote it: nothing was written.
var ErrChangedUnder = errors.New("changed while mcpolicy wrote it")

// afterEdit runs between the read and the check before the rename (tests
// stand in for the client saving its settings there).
var afterEdit = func(file string) {}

// DefaultStateDir is $XDG_STATE_HOME/mcpolicy, else ~/.local/state/mcpolicy.
func DefaultStateDir() string {
	if d := lookupEnv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpolicy")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "mcpolicy")
}

// seen is the file as it was read: what must still be there at the rename.
type seen struct {
	exists   bool
	ino, dev uint64
	size     int64
	mtime    int64
	mode     os.FileMode
	uid, gid int
	sum      [32]byte
	src      []byte
	torn     bool // read while it was written
}

// Save writes what o.Edit returns into o.File: through a symlink to its
// target (the link stays); a hard-linked or read-only file is refused.
// It holds an exclusive lock on the file's folder (other mcpolicy runs
// wait), and just before the rename checks that the file is still the one
// it read (inode, size, mtime, content): when the client rewrote it
// meanwhile, it reads and edits again, up to Retries times, then fails
// naming the file. The new file has the old one's mode, owner and group;
// the old bytes go to a backup under StateDir/backups.
func Save(o SaveOptions) (*Saved, error) {
	file, err := resolve(o.File, o.Untrusted)
	if err != nil {
		return nil, err
	}
	state := o.StateDir
	if state == "" {
		state = DefaultStateDir()
	}
	unlock, err := lockFolder(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	defer unlock()
	g := hostfile.NewGuard(o.Untrusted)
	res := &Saved{File: file}
	for try := 0; try < Retries; try++ {
		was, err := look(g, file)
		if err != nil {
			return nil, err
		}
		out, err := o.Edit(was.src)
		if err != nil {
			return nil, err
		}
		if was.exists && bytes.Equal(out, was.src) {
			return res, nil
		}
		afterEdit(file)
		ro := hostfile.Replace{Perm: 0o644, UID: -1, GID: -1, Sync: true}
		if was.exists {
			ro.Perm = was.mode.Perm()
			if os.Geteuid() == 0 { // only root may give a file away
				ro.UID, ro.GID = was.uid, was.gid
			}
		}
		ro.Before = func() error {
			now, err := look(g, file)
			if err != nil {
				return err
			}
			if !now.same(was) {
				return ErrChangedUnder
			}
			if was.exists && len(was.src) > 0 {
				if res.Backup, err = backup(state, file, was.src); err != nil {
					return err
				}
			}
			return nil
		}
		err = g.Replace(file, out, ro)
		if errors.Is(err, ErrChangedUnder) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res.Changed = true
		return res, nil
	}
	return nil, fmt.Errorf("%s: %w %d times in a row: nothing written; run again once the client is closed", file, ErrChangedUnder, Retries)
}

// same: nothing wrote the file since was (a rename over it changes the
// inode, an edit in place the mtime or size; the content hash catches an
// edit within the mtime's granularity).
func (s *seen) same(was *seen) bool {
	if s.exists != was.exists || s.torn || was.torn {
		return false
	}
	return !s.exists || s.ino == was.ino && s.dev == was.dev && s.size == was.size && s.mtime == was.mtime && s.sum == was.sum
}

// resolve is the file a write goes to: a symlink's target (a dotfile
// manager's link stays a link, and the file it names is written). Inside a
// folder a server may write, a link is refused, not followed (hostfile).
func resolve(file string, untrusted []string) (string, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return "", err
	}
	fi, err := os.Lstat(abs)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return abs, nil
	}
	// A planted link is refused here, as a read through it would be.
	if _, err := hostfile.ReadFile(abs, untrusted); err != nil && !errors.Is(err, fs.ErrNotExist) {
		var t *hostfile.TamperedError
		if errors.As(err, &t) {
			return "", err
		}
	}
	target, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) { // a dangling link: create what it names
		link, lerr := os.Readlink(abs)
		if lerr != nil {
			return "", lerr
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(abs), link)
		}
		return filepath.Clean(link), nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: following its symlink: %w", abs, err)
	}
	return target, nil
}

// look reads file and what identifies this version of it, refusing what
// Save must not replace.
func look(g *hostfile.Guard, file string) (*seen, error) {
	s := &seen{}
	src, err := g.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(file)
	if errors.Is(err, fs.ErrNotExist) { // removed since the read: read again
		return &seen{exists: true, src: src, torn: true}, nil
	}
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no inode to check it by", file)
	}
	if st.Nlink > 1 {
		return nil, fmt.Errorf("%s has %d hard links: refusing to write it (a new file would split them, and the other names would keep the old content); edit it by hand, or point --file at a copy", file, st.Nlink)
	}
	if fi.Mode().Perm()&0o200 == 0 {
		return nil, fmt.Errorf("%s is read-only (mode %04o): refusing to replace it; make it writable (chmod u+w) if it should change", file, fi.Mode().Perm())
	}
	s.exists, s.src = true, src
	s.ino, s.dev, s.size = uint64(st.Ino), uint64(st.Dev), fi.Size()
	s.mtime = fi.ModTime().UnixNano()
	s.mode, s.uid, s.gid = fi.Mode(), int(st.Uid), int(st.Gid)
	s.sum = sha256.Sum256(src)
	s.torn = int64(len(src)) != s.size
	return s, nil
}

// lockFolder takes an exclusive flock on dir, the nearest of its folders
// that exists. The folder, not the file: the rename replaces the file's
// inode, and a lock on the old one would not exclude a run that opened the
// new one; a lock file beside it would land in the user's project. The
// lock goes with the process: a killed run leaves none behind.
func lockFolder(dir string) (func(), error) {
	for tries := 0; ; tries++ {
		d := dir
		for {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				break
			}
			p := filepath.Dir(d)
			if p == d {
				break
			}
			d = p
		}
		fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%s: locking it: %w", d, err)
		}
		if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: locking it: %w", d, err)
		}
		// The file's folder appeared while this run waited (another
		// created it): lock that one, as the run that created it did.
		if fi, err := os.Stat(dir); d != dir && err == nil && fi.IsDir() && tries < 3 {
			unix.Close(fd)
			continue
		}
		return func() { unix.Close(fd) }, nil
	}
}

// BackupDir is where the backups of file go: one folder per file, named
// by the hash of its absolute path.
func BackupDir(stateDir, file string) string {
	h := sha256.Sum256([]byte(file))
	return filepath.Join(stateDir, "backups", hexenc.EncodeToString(h[:8]))
}

// backup keeps src, the bytes about to be replaced, as the newest
// generation of file's backups (0600 in 0700 folders: these files hold
// tokens), and drops generations past Backups. It returns the backup.
func backup(stateDir, file string, src []byte) (string, error) {
	dir := BackupDir(stateDir, file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("backing up %s: %w", file, err)
	}
	// The folder's name is a hash: a file in it names the original.
	if err := os.WriteFile(filepath.Join(dir, "path"), []byte(file+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("backing up %s: %w", file, err)
	}
	name := time.Now().UTC().Format("20060102T150405.000000000Z")
	out := filepath.Join(dir, name)
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("backing up %s: %w", file, err)
	}
	_, err = f.Write(src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out)
		return "", fmt.Errorf("backing up %s: %w", file, err)
	}
	gens, _ := Generations(stateDir, file)
	for len(gens) > Backups {
		os.Remove(gens[0])
		gens = gens[1:]
	}
	return out, nil
}

// Generations lists file's backups, oldest first.
func Generations(stateDir, file string) ([]string, error) {
	dir := BackupDir(stateDir, file)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && e.Name() != "path" {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out) // the names are UTC timestamps
	return out, nil
}

// Restore puts back the newest backup of file that differs from what it
// holds now, through Save: under the lock, mode and owner kept, and what it
// replaces becomes a backup in turn (a second Restore undoes the first).
// It returns what Save did and the backup it put back.
func Restore(file string, untrusted []string, stateDir string) (*Saved, string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	target, err := resolve(file, untrusted)
	if err != nil {
		return nil, "", err
	}
	gens, err := Generations(stateDir, target)
	if len(gens) == 0 {
		return nil, "", fmt.Errorf("%s: no backup in %s to restore (mcpolicy keeps one for each write since it keeps them there)", target, BackupDir(stateDir, target))
	}
	if err != nil {
		return nil, "", err
	}
	var from string
	saved, err := Save(SaveOptions{File: target, Untrusted: untrusted, StateDir: stateDir, Edit: func(src []byte) ([]byte, error) {
		for i := len(gens) - 1; i >= 0; i-- {
			b, err := hostfile.ReadRegular(gens[i], 64<<20)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(b, src) {
				from = gens[i]
				return b, nil
			}
		}
		from = gens[len(gens)-1]
		return src, nil
	}})
	return saved, from, err
}
