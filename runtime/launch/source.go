package launch

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Sources opens mount sources the way a hostile server cannot redirect:
// below the deepest base that holds them (the project root, the home
// folder, else /), with no symlink in any component and without leaving
// the base (openat2 RESOLVE_NO_SYMLINKS|RESOLVE_BENEATH). The bases
// themselves are resolved as the user gave them: a server cannot write
// the client entry that names them.
type Sources struct {
	bases []string // absolute, clean, deepest first
}

// NewSources takes the bases (empty ones are ignored); / is always one.
func NewSources(bases ...string) *Sources {
	s := &Sources{bases: []string{"/"}}
	for _, b := range bases {
		if b != "" && filepath.IsAbs(b) {
			s.bases = append(s.bases, filepath.Clean(b))
		}
	}
	sort.SliceStable(s.bases, func(i, j int) bool { return len(s.bases[i]) > len(s.bases[j]) })
	return s
}

// split returns the base holding p and the path below it ("." for the base).
func (s *Sources) split(p string) (base, rel string) {
	p = filepath.Clean(p)
	for _, b := range s.bases {
		if p == b {
			return b, "."
		}
		if r, ok := strings.CutPrefix(p, strings.TrimSuffix(b, "/")+"/"); ok {
			return b, r
		}
	}
	return "/", strings.TrimPrefix(p, "/")
}

// IsMissing reports whether err says a source does not exist.
func IsMissing(err error) bool { return errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) }

// IsMissingSource reports whether err says a source, or a folder on its
// way, does not exist: a runtime pack's path is then skipped.
func IsMissingSource(err error) bool { return IsMissing(err) || errors.Is(err, unix.ENOTDIR) }

// child is one top-level entry of a fixed-top mount.
type child struct {
	name string
	fd   int  // O_PATH, close-on-exec
	dir  bool // a folder, not a file
}

func closeChildren(cs []child) {
	for _, c := range cs {
		unix.Close(c.fd)
	}
}

// Kind describes what a path is now, for tampering messages: "symlink to
// X", "folder", "file", or "missing".
func Kind(p string) string {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "missing"
	case fi.Mode()&os.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return "symlink to " + t
	case fi.IsDir():
		return "folder"
	}
	return "file"
}

func closeFD(fd int) { unix.Close(fd) }
