package entry

import (
	"bytes"
	"crypto/sha256"
	hexenc "encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

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

// RetryPause is how long Save waits before it reads a file again that was
// open for writing (a client saving in place), doubling at each try up to
// RetryPauseMax.
const (
	RetryPause    = 20 * time.Millisecond
	RetryPauseMax = 500 * time.Millisecond
)

// Backups is how many generations of a file Save keeps.
const Backups = 20

// ErrChangedUnder is a file another program kept rewriting while Save
// wrote it: nothing was written.
var ErrChangedUnder = errors.New("changed while mcpolicy wrote it")

// afterEdit runs between the read and the check before the rename, and
// backingUp as a backup begins (tests stand in for the client saving its
// settings there).
var afterEdit, backingUp = func(file string) {}, func(file string) {}

// DefaultStateDir is $XDG_STATE_HOME/mcpolicy, else
// ~/.local/state/mcpolicy; "" when neither is an absolute path (a service,
// `env -i`): backups hold tokens, and a relative folder would put them
// wherever mcpolicy runs, the project included.
func DefaultStateDir() string {
	if d := lookupEnv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpolicy")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "mcpolicy")
	}
	return ""
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
	xattrs   map[string][]byte // ACL and attributes, which the new file gets too
	torn     bool              // read while it was written
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
	if !filepath.IsAbs(state) {
		return nil, fmt.Errorf("%s: nowhere to keep a backup of it: set HOME or XDG_STATE_HOME (an absolute path; the backups go to $XDG_STATE_HOME/mcpolicy/backups)", file)
	}
	if g, in := inside(state, o.Untrusted); in {
		return nil, fmt.Errorf("the backups folder %s lies inside %s, which a server may write: it could read the tokens in the backups, and plant one for --restore; set XDG_STATE_HOME to a folder outside every grant", state, g)
	}
	unlock, err := hostfile.LockFolder(filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	defer unlock()
	g := hostfile.NewGuard(o.Untrusted)
	res := &Saved{File: file}
	busy := false // the last try found the file open for writing
	for try := 0; try < Retries; try++ {
		if busy { // let the client finish its save
			time.Sleep(min(RetryPause<<try, RetryPauseMax))
		}
		was, err := look(g, file)
		if err != nil {
			return nil, err
		}
		if busy = was.exists && writing(file); busy {
			continue // a client saving in place: what was read may be half of it
		}
		out, err := o.Edit(was.src)
		if err != nil {
			return nil, err
		}
		if was.exists && bytes.Equal(out, was.src) {
			return res, nil
		}
		// The backup is made before the last look, not in the window
		// between it and the rename, which stays a few system calls wide.
		var made bool
		if was.exists && len(was.src) > 0 {
			if res.Backup, made, err = backup(state, file, was.src); err != nil {
				return nil, err
			}
		}
		afterEdit(file)
		ro := hostfile.Replace{Perm: 0o644, UID: -1, GID: -1, Sync: true, Xattrs: was.xattrs}
		if was.exists {
			ro.Perm = was.mode.Perm()
			if os.Geteuid() == 0 { // only root may give a file away
				ro.UID, ro.GID = was.uid, was.gid
			}
		}
		var held *lease
		ro.Before = func() error {
			// While the lease is held, another program's open of the file
			// for writing waits for the rename; one already open refuses it.
			var ok bool
			if held, ok = takeLease(file); !ok {
				busy = true
				return ErrChangedUnder
			}
			now, err := look(g, file)
			if err == nil && !now.same(was) {
				err = ErrChangedUnder
			}
			if err == nil && !held.intact() { // an open for writing began meanwhile
				busy, err = true, ErrChangedUnder
			}
			if err != nil {
				held.release()
			}
			return err
		}
		ro.After = func() { held.release() }
		err = g.Replace(file, out, ro)
		if errors.Is(err, ErrChangedUnder) {
			if made { // not what the file held when it was replaced: no generation
				os.Remove(res.Backup)
			}
			res.Backup = ""
			continue
		}
		if err != nil {
			return nil, err
		}
		res.Changed = true
		return res, nil
	}
	if busy {
		return nil, fmt.Errorf("%s: another program held it open for writing %d times in a row (a client saving it?): nothing written; run again once the client is closed", file, Retries)
	}
	return nil, fmt.Errorf("%s: %w %d times in a row: nothing written; run again once the client is closed", file, ErrChangedUnder, Retries)
}

// inside is the first of folders that path lies in (or is).
func inside(path string, folders []string) (string, bool) {
	for _, f := range folders {
		if f != "" && (path == f || strings.HasPrefix(path, strings.TrimSuffix(f, "/")+"/")) {
			return f, true
		}
	}
	return "", false
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
	// Link by link: a chain whose last file does not exist yet (a
	// dotfile manager's) gets that file, and every link stays.
	cur := abs
	for hops := 0; hops < 40; hops++ {
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return cur, nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: following its symlink: %w", abs, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return filepath.EvalSymlinks(cur)
		}
		link, err := os.Readlink(cur)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(cur), link)
		}
		cur = filepath.Clean(link)
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links (a link that leads back to itself?): point it at the config file", abs)
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
	if s.xattrs, err = hostfile.Xattrs(file); err != nil {
		return nil, err
	}
	return s, nil
}

// BackupDir is where the backups of file go: one folder per file, named
// by the hash of its absolute path.
func BackupDir(stateDir, file string) string {
	h := sha256.Sum256([]byte(file))
	return filepath.Join(stateDir, "backups", hexenc.EncodeToString(h[:8]))
}

// backup keeps src, the bytes about to be replaced, as the newest
// generation of file's backups (0600 in 0700 folders: these files hold
// tokens), and drops generations past Backups. It returns the backup, and
// whether it made it (false: the newest generation already holds src).
func backup(stateDir, file string, src []byte) (string, bool, error) {
	backingUp(file)
	dir := BackupDir(stateDir, file)
	fail := func(err error) (string, bool, error) { return "", false, fmt.Errorf("backing up %s: %w", file, err) }
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	if err := ownFolders(stateDir, dir); err != nil {
		return fail(err)
	}
	gens, err := Generations(stateDir, file)
	if err != nil {
		return fail(err)
	}
	if n := len(gens); n > 0 {
		if b, err := readGeneration(gens[n-1]); err == nil && bytes.Equal(b, src) {
			return gens[n-1], false, nil
		}
	}
	// The folder's name is a hash: a file in it names the original.
	if err := writeNew(filepath.Join(dir, "path"), []byte(file+"\n"), true); err != nil {
		return fail(err)
	}
	out := filepath.Join(dir, time.Now().UTC().Format("20060102T150405.000000000Z"))
	if err := writeNew(out, src, false); err != nil {
		return fail(err)
	}
	for gens = append(gens, out); len(gens) > Backups; gens = gens[1:] {
		os.Remove(gens[0])
	}
	return out, true, nil
}

// ownFolders checks each folder from stateDir down to dir: mcpolicy's
// own, so a folder (not a link), the user's, and writable by no one else.
// Otherwise whoever planted it would choose what pruning removes, where
// `path` is written, and what --restore puts back.
func ownFolders(stateDir, dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink: mcpolicy's backups folder must be a folder of its own (remove the link)", d)
		case !fi.IsDir():
			return fmt.Errorf("%s is not a folder", d)
		case st != nil && int(st.Uid) != os.Geteuid():
			return fmt.Errorf("%s belongs to uid %d, not to you: refusing to keep backups in it", d, st.Uid)
		case fi.Mode().Perm()&0o022 != 0:
			return fmt.Errorf("%s can be written by others (mode %04o): refusing to keep backups in it (chmod 700 it)", d, fi.Mode().Perm())
		}
		if d == stateDir || d == filepath.Dir(d) {
			return nil
		}
	}
}

// writeNew writes a file of the backups folder, 0600, never through a
// link or into a FIFO; replace: an old one of that name goes first.
func writeNew(file string, b []byte, replace bool) error {
	if replace {
		if fi, err := os.Lstat(file); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file: remove it", file)
		}
		os.Remove(file)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(file)
	}
	return err
}

// generationName is a backup's name: when it was made, in UTC.
var generationName = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{9}Z$`)

// Generations lists file's backups, oldest first: the regular files of its
// folder named as Save names them (nothing else there is pruned or
// restored).
func Generations(stateDir, file string) ([]string, error) {
	dir := BackupDir(stateDir, file)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() && generationName.MatchString(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out) // the names are UTC timestamps
	return out, nil
}

// readGeneration reads a backup that is what Save leaves: a regular file,
// yours, that no one else may read or write.
func readGeneration(file string) ([]byte, error) {
	fi, err := os.Lstat(file)
	if err != nil {
		return nil, err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 || st != nil && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("%s is not a backup mcpolicy made (a regular file of yours, mode 600)", file)
	}
	return hostfile.ReadRegular(file, 64<<20)
}

// Restore puts back the newest backup of file that differs from what it
// holds now and that loads (a backup cut short by a crash does not), each
// checked by loads, through Save: under the lock, mode and owner kept, and
// what it replaces becomes a backup in turn (a second Restore undoes the
// first). It returns what Save did and the backup it put back.
func Restore(file string, untrusted []string, stateDir string, loads func([]byte) error) (*Saved, string, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	target, err := resolve(file, untrusted)
	if err != nil {
		return nil, "", err
	}
	if g, in := inside(stateDir, untrusted); in {
		return nil, "", fmt.Errorf("the backups folder %s lies inside %s, which a server may write: refusing to restore from it (a server could have planted what is there)", stateDir, g)
	}
	dir := BackupDir(stateDir, target)
	if _, err := os.Lstat(dir); err == nil {
		if err := ownFolders(stateDir, dir); err != nil {
			return nil, "", err
		}
	}
	gens, err := Generations(stateDir, target)
	if err != nil {
		return nil, "", err
	}
	if len(gens) == 0 {
		return nil, "", fmt.Errorf("%s: no backup in %s to restore (mcpolicy keeps one for each write since it keeps them there)", target, dir)
	}
	var from string
	var skipped []string
	saved, err := Save(SaveOptions{File: target, Untrusted: untrusted, StateDir: stateDir, Edit: func(src []byte) ([]byte, error) {
		from, skipped = "", nil
		for i := len(gens) - 1; i >= 0; i-- {
			b, err := readGeneration(gens[i])
			if err == nil && loads != nil {
				err = loads(b)
			}
			if err != nil {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", filepath.Base(gens[i]), err))
				continue
			}
			from = gens[i]
			if !bytes.Equal(b, src) {
				return b, nil
			}
		}
		if from == "" {
			return nil, fmt.Errorf("%s: none of its %d backups in %s can be put back: %s", target, len(gens), dir, strings.Join(skipped, "; "))
		}
		return src, nil
	}})
	return saved, from, err
}
