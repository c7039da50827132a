// Package hostfile writes, reads back, removes and chmods files on the host for mcpolicy's
// commands (build's artefacts, prove's evidence, client configs, suggest's
// patch) where a confined server may have been before them.
//
// A server with a read-write grant writes anything there, links included,
// and may do so between two runs. What it left must not choose which file
// mcpolicy writes, truncates or removes: a symlink evidence/evidence.md ->
// ~/.bashrc would otherwise have `mcpolicy prove` write the user's shell
// start-up file. So the folders a server may write (the caller names them:
// the project and every read-write mount source) are walked one component
// at a time with O_NOFOLLOW: below the first of them, a symlink anywhere on
// the way is refused, never followed. Above them (the user's own folders,
// a symlinked home) links are followed as the user made them. A file is
// written to a fresh name (O_CREAT|O_EXCL) in the folder so opened, then
// renamed over the old one: an existing file is replaced, never opened, so
// neither a hard link nor a FIFO left there is written through.
package hostfile

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcpolicy/mcpolicy/internal/printable"
	"golang.org/x/sys/unix"
)

// TamperedError is a link (or a non-regular file) found where a server may
// write, on the way to a file mcpolicy was to write or remove.
type TamperedError struct{ msg string }

func (e *TamperedError) Error() string { return e.msg }

// WriteFile writes data to path (created with perm, folders 0755 as
// needed) and renames it over what is there, in the same folder: a reader
// sees the old file or the new one. untrusted are the folders a server may
// write: no symlink below the first of them is followed, and the file
// itself, where it lies in one, must be absent or a regular file (a link
// there is refused, not replaced).
func WriteFile(path string, data []byte, perm os.FileMode, untrusted []string) error {
	return NewGuard(untrusted).WriteFile(path, data, perm)
}

// Guard is the folders a server may write, each known by device and inode
// from when it was made: a command writing many files (build's artefacts
// for every server) resolves them once, not once a file.
type Guard struct {
	ids  map[[2]uint64]string
	mu   sync.Mutex         // a held Guard is used by several goroutines
	held map[string]heldDir // between Hold and Release: the folders opened, by path
}

type heldDir struct {
	fd     int
	inside string
}

// maxHeld bounds the folders a Guard holds open; past it, each is opened
// for one file, as without Hold.
const maxHeld = 64

// Hold has g keep the folders it opens open until Release, for a command
// writing many files into a few folders (build: 1001 artefacts for 500
// servers, in five): each is walked once, not once a file. A held folder
// stays the one walked and checked: if a server renames it away and plants
// a link in its place, the files still go to the folder that was checked,
// which is wherever the server could move it, inside its own grant (it
// cannot rename a folder out of it: across its bind mount rename(2) fails
// with EXDEV, Landlock and seatbelt deny the destination). So such a swap
// during a build is not reported as tampering, as a fresh walk would; and
// a held folder the server removes fails the build's remaining files in it
// (build again). Between Hold and Release, g may be used by several
// goroutines.
func (g *Guard) Hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = map[string]heldDir{}
}

// Release closes the folders held since Hold, once every call using
// them has returned.
func (g *Guard) Release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, d := range g.held {
		unix.Close(d.fd)
	}
	g.held = nil
}

// dir is openDir, through the held folders; done closes what is not held.
func (g *Guard) dir(dir string, create bool) (fd int, inside string, done func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d, ok := g.held[dir]; ok {
		return d.fd, d.inside, func() {}, nil
	}
	fd, inside, err = g.openDir(dir, create)
	if err != nil {
		return -1, "", nil, err
	}
	if g.held != nil && len(g.held) < maxHeld {
		g.held[dir] = heldDir{fd: fd, inside: inside}
		return fd, inside, func() {}, nil
	}
	return fd, inside, func() { unix.Close(fd) }, nil
}

// NewGuard resolves the folders a server may write.
func NewGuard(untrusted []string) *Guard {
	g := &Guard{ids: map[[2]uint64]string{}}
	for _, u := range untrusted {
		if u == "" {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(u, &st) == nil {
			id := [2]uint64{uint64(st.Dev), uint64(st.Ino)}
			if _, seen := g.ids[id]; !seen {
				g.ids[id] = filepath.Clean(u)
			}
		}
	}
	return g
}

// WriteFile is the package's WriteFile, against g's folders.
func (g *Guard) WriteFile(path string, data []byte, perm os.FileMode) error {
	return g.Replace(path, data, Replace{Perm: perm, UID: -1, GID: -1})
}

// Replace is how Guard.Replace writes a file that is someone else's (a
// client's config): its mode and owner, synced to disk, and a last check
// before the rename.
type Replace struct {
	Perm     os.FileMode
	UID, GID int // -1: the caller's
	// Sync fsyncs the file before the rename and the folder after: a
	// crash leaves the old file or the new one, never an empty one.
	Sync bool
	// Before runs after the new content is written and synced, just
	// before the rename; an error leaves the old file and is returned.
	Before func() error
	// After runs once the rename was tried (whatever came of it), when
	// Before ran and returned nil: what Before holds, it lets go.
	After func()
	// Xattrs are set on the new file before the rename (an attribute it
	// already holds with that value is left): the old file's ACL and
	// attributes, which a rename would drop.
	Xattrs map[string][]byte
}

// Replace is WriteFile with the temporary file given o's mode and owner
// (fchown before the rename: no moment where the file is another's).
func (g *Guard) Replace(path string, data []byte, o Replace) error {
	perm := o.Perm
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dfd, inside, done, err := g.dir(filepath.Dir(abs), true)
	if err != nil {
		return err
	}
	defer done()
	base := filepath.Base(abs)
	var st unix.Stat_t
	switch err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return fmt.Errorf("%s: %w", printable.String(abs), err)
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
	case st.Mode&unix.S_IFMT == unix.S_IFLNK && inside == "":
		// The user's own link (a dotfile manager's): replaced, as before.
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		return tampered("%s is a symlink inside %s, which a server may write: refusing to write through it or over it (it may have been planted to make mcpolicy write elsewhere); remove it, or write to a path outside the server's read-write grants", abs, inside)
	default:
		return tampered("%s is not a regular file (%s) inside %s, which a server may write: refusing to replace it; remove it, or write to a path outside the server's read-write grants", abs, fileType(uint32(st.Mode)), inside)
	}
	tmp := "." + base + ".tmp-" + random()
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("%s: creating a temporary file beside it: %w", printable.String(abs), err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(filepath.Dir(abs), tmp))
	_, werr := f.Write(data)
	if werr == nil && (o.UID >= 0 || o.GID >= 0) {
		werr = f.Chown(o.UID, o.GID) // before the chmod: chown clears setuid bits
	}
	if werr == nil {
		werr = f.Chmod(perm) // whatever the umask took
	}
	if werr == nil {
		werr = setXattrs(fd, o.Xattrs)
	}
	if werr == nil && o.Sync {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil && o.Before != nil {
		if berr := o.Before(); berr != nil {
			unix.Unlinkat(dfd, tmp, 0)
			return berr
		}
		if o.After != nil {
			defer o.After()
		}
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, base)
	}
	if werr != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("%s: %w", printable.String(abs), werr)
	}
	if o.Sync {
		if err := unix.Fsync(dfd); err != nil {
			return fmt.Errorf("%s: syncing its folder: %w", printable.String(abs), err)
		}
	}
	return nil
}

// ReadFile reads the file at path, reaching its folder as WriteFile does:
// inside an untrusted folder the file must be a regular file, not a link
// (what mcpolicy reads there it may write back beside it, a backup). A
// file that is not there is fs.ErrNotExist.
func ReadFile(path string, untrusted []string) ([]byte, error) {
	return NewGuard(untrusted).ReadFile(path)
}

// ReadFile is the package's ReadFile, against g's folders.
func (g *Guard) ReadFile(path string) ([]byte, error) {
	return g.read(path, maxRead)
}

// Holds reports whether the file at path, reached as ReadFile reaches it,
// holds exactly data: build's read-back of an artefact before it is
// rewritten. It reads no more than len(data)+1 bytes, and nothing when the
// size differs: a server that plants sparse files at the limit under
// every artefact name does not have build read gigabytes (on every core).
func (g *Guard) Holds(path string, data []byte) bool {
	b, err := g.read(path, int64(len(data)))
	return err == nil && bytes.Equal(b, data)
}

// read is ReadFile with limit for maxRead: a larger file, by its size or
// by what it gives, is an error.
func (g *Guard) read(path string, limit int64) ([]byte, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dfd, inside, done, err := g.dir(filepath.Dir(abs), false)
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%s: %w", printable.String(abs), fs.ErrNotExist)
	}
	if err != nil {
		return nil, err
	}
	defer done()
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if inside != "" {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Openat(dfd, filepath.Base(abs), flags, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, tampered("%s is a symlink inside %s, which a server may write: refusing to read through it (it may have been planted to have mcpolicy copy another file); remove it, or name a path outside the server's read-write grants", abs, inside)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil, fmt.Errorf("%s: %w", printable.String(abs), fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", printable.String(abs), err)
	}
	f := os.NewFile(uintptr(fd), abs)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", printable.String(abs), err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file (%s)", printable.String(abs), fileType(uint32(st.Mode)))
	}
	// A server may plant a huge (sparse) file, or append to one while it
	// is read: read no more than the limit, whatever the size said. The
	// buffer starts at the size said (build reads back 1001 artefacts).
	var b []byte
	if st.Size <= limit {
		b, err = readAtMost(f, st.Size, limit+1)
	}
	if err == nil && (st.Size > limit || int64(len(b)) > limit) {
		err = fmt.Errorf("larger than %d bytes: refusing to read it", limit)
		if limit == maxRead {
			err = fmt.Errorf("larger than %d MiB: refusing to read it", maxRead>>20)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", printable.String(abs), err)
	}
	return b, nil
}

// maxRead is the most ReadFile reads: far above any config or artefact
// mcpolicy reads back.
const maxRead = 64 << 20

// Remove removes the file at path (a link itself, never what it names),
// reaching its folder as WriteFile does. A file that is not there is not
// an error.
func Remove(path string, untrusted []string) error {
	return NewGuard(untrusted).Remove(path)
}

// Remove is the package's Remove, against g's folders.
func (g *Guard) Remove(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	dfd, _, done, err := g.dir(filepath.Dir(abs), false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer done()
	if err := unix.Unlinkat(dfd, filepath.Base(abs), 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("removing %s: %w", printable.String(abs), err)
	}
	return nil
}

// maxLinks is how many of the user's own symlinks a path may pass through.
const maxLinks = 40

type level struct {
	fd     int
	inside string // the untrusted folder this one is in (or is), "" if none
	name   string // for messages
}

// openDir opens the folder dir (absolute), creating what is missing when
// create is set, and says which untrusted folder it lies in ("" if none).
func (g *Guard) openDir(dir string, create bool) (int, string, error) {
	ids := g.ids
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	root, err := unix.Open("/", flags, 0)
	if err != nil {
		return -1, "", err
	}
	stack := []level{{fd: root, name: "/"}}
	mark := func(l *level, parent string) {
		l.inside = parent
		var st unix.Stat_t
		if l.inside == "" && unix.Fstat(l.fd, &st) == nil {
			l.inside = ids[[2]uint64{uint64(st.Dev), uint64(st.Ino)}]
		}
	}
	mark(&stack[0], "")
	closeAll := func() {
		for _, l := range stack {
			unix.Close(l.fd)
		}
	}
	queue := strings.Split(filepath.Clean(dir), "/")
	links := 0
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		cur := stack[len(stack)-1]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				unix.Close(cur.fd)
				stack = stack[:len(stack)-1]
			}
			continue
		}
		here := filepath.Join(cur.name, name)
		fd, err := unix.Openat(cur.fd, name, flags, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(cur.fd, name, 0o755); err == nil || errors.Is(err, unix.EEXIST) {
				fd, err = unix.Openat(cur.fd, name, flags, 0)
			}
		}
		if err != nil {
			var st unix.Stat_t
			if unix.Fstatat(cur.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFLNK {
				closeAll()
				if errors.Is(err, unix.ENOTDIR) {
					return -1, "", fmt.Errorf("%s: not a folder (%s)", printable.String(here), fileType(uint32(st.Mode)))
				}
				return -1, "", fmt.Errorf("%s: %w", printable.String(here), err)
			}
			if cur.inside != "" {
				closeAll()
				return -1, "", tampered("%s is a symlink inside %s, which a server may write: refusing to follow it (it may have been planted to make mcpolicy write elsewhere); remove it, or name a path outside the server's read-write grants", here, cur.inside)
			}
			if links++; links > maxLinks {
				closeAll()
				return -1, "", fmt.Errorf("%s: %w", printable.String(here), unix.ELOOP)
			}
			target, err := readlinkat(cur.fd, name)
			if err != nil {
				closeAll()
				return -1, "", fmt.Errorf("%s: %w", printable.String(here), err)
			}
			if filepath.IsAbs(target) {
				for _, l := range stack[1:] {
					unix.Close(l.fd)
				}
				stack = stack[:1]
			}
			queue = append(strings.Split(target, "/"), queue...)
			continue
		}
		l := level{fd: fd, name: here}
		mark(&l, cur.inside)
		stack = append(stack, l)
	}
	top := stack[len(stack)-1]
	for _, l := range stack[:len(stack)-1] {
		unix.Close(l.fd)
	}
	return top.fd, top.inside, nil
}

// readAtMost reads r to its end, or to limit bytes, into a buffer of size
// bytes to start with (plus one: the read that sees the end).
func readAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	b := make([]byte, 0, min(size, limit)+1)
	for int64(len(b)) < limit {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grows the buffer
		}
		n, err := r.Read(b[len(b):min(int64(cap(b)), limit)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

func readlinkat(dfd int, name string) (string, error) {
	for size := 256; size <= 1<<16; size *= 4 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
	return "", unix.ENAMETOOLONG
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a folder"
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "not a file"
}

// tampered makes a TamperedError, its message spelt for a terminal
// (internal/printable): the path names what a server may have made, and a
// name holding an escape sequence is shown, not run.
func tampered(format string, a ...any) error {
	return &TamperedError{printable.String(fmt.Sprintf(format, a...))}
}

func random() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func dirOf(path string) string { return filepath.Dir(path) }
