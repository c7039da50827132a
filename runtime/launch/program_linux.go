package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// digest hashes a regular file opened below its base without following a
// symlink (a server that can write beside the program could swap it for
// a link to one of its own).
func (s *Sources) digest(p string) (string, error) {
	base, rel := s.split(p)
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", fmt.Errorf("opening %s: %w", base, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   uint64(unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == nil:
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return "", tampered("the program %s is, or passes through, a symlink below %s: refusing to start it (a server that can write beside it can swap it for a link to its own). If you made the link, run the program by its real path; if not, inspect it: `ls -la %s`", p, base, filepath.Dir(p))
	case errors.Is(err, unix.ENOSYS):
		return "", &UnsupportedError{fmt.Errorf("openat2 is not available (Linux 5.6+): the program %s cannot be opened without following symlinks", p)}
	case errors.Is(err, unix.ENOENT):
		return "", tampered("the program %s, pinned by the client entry, is gone: refusing to start. If you removed it, build it again and run `mcpolicy client TARGET --write`", p)
	default:
		return "", fmt.Errorf("program %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", tampered("the program %s is not a regular file (%s): refusing to start it", p, fi.Mode().Type())
	}
	// A writer could swap in a sparse file of a terabyte: hashing it would
	// hold the client for hours. The size is checked before the first
	// read, and the read stops past the cap (the file may grow meanwhile).
	if fi.Size() > MaxProgramSize {
		return "", tampered("the program %s is %d bytes, more than the %d a pinned program may be: refusing to start it without reading it (a server that can write it may have swapped in a huge or sparse file). If it is yours, run it from a folder no server writes, so it needs no pin", p, fi.Size(), int64(MaxProgramSize))
	}
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxProgramSize+1))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", p, err)
	}
	if n > MaxProgramSize {
		return "", tampered("the program %s grew past %d bytes while it was read: refusing to start it (a server that can write it is changing it)", p, int64(MaxProgramSize))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// MaxProgramSize bounds what the launcher reads to check a pinned
// program: larger files are refused unread (exit 8).
const MaxProgramSize = 1 << 30
