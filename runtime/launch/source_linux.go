package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/mcpolicy/mcpolicy/internal/protect"
	"golang.org/x/sys/unix"
)

// Open returns an O_PATH descriptor (close-on-exec) for the source p, or a
// TamperError when p is or passes through a symlink below its base.
func (s *Sources) Open(p string) (int, error) {
	return s.open(p, unix.O_PATH)
}

// OpenDir opens a source folder for listing.
func (s *Sources) OpenDir(p string) (int, error) {
	return s.open(p, unix.O_RDONLY|unix.O_DIRECTORY)
}

func (s *Sources) open(p string, flags int) (int, error) {
	if !filepath.IsAbs(p) {
		return -1, fmt.Errorf("mount source %q is not an absolute path", p)
	}
	base, rel := s.split(p)
	dir, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("opening %s: %w", base, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == nil:
		return fd, nil
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return -1, tampered("mount source %s is, or passes through, a symlink below %s: refusing to mount it (a server that can write beside a source can swap it for a link to anywhere). If you made the link, mount its target by its real path; if not, inspect it: `ls -la %s`", p, base, filepath.Dir(p))
	case errors.Is(err, unix.ENOSYS):
		return -1, &UnsupportedError{fmt.Errorf("openat2 is not available (Linux 5.6+): mount sources cannot be opened without following symlinks")}
	default:
		return -1, fmt.Errorf("mount source %s: %w", p, err)
	}
}

// topLevel lists the entries of a folder for a fixed-top mount, each opened
// without following symlinks; symlinks are left out (they stay visible, as
// links, in the read-only folder, and resolve inside the sandbox).
//
// A protected name (less those unprotected) that is a symlink is refused:
// the build refuses it too, so one appearing since is tampering — its
// target would be writable through the link.
func (s *Sources) topLevel(root string, unprotected []string) ([]child, error) {
	dfd, err := s.OpenDir(root)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dfd), root)
	names, err := f.Readdirnames(-1)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("listing %s: %w", root, err)
	}
	sort.Strings(names)
	const most = 512 // each is a mount and, for bwrap, a descriptor
	if len(names) > most {
		f.Close()
		return nil, fmt.Errorf("%s has %d top-level entries: a read-write mount of the project fixes its top level with one mount per entry, at most %d; mount the folders the server writes instead", root, len(names), most)
	}
	var out []child
	for _, n := range names {
		fd, err := unix.Openat2(int(f.Fd()), n, &unix.OpenHow{
			Flags:   uint64(unix.O_PATH | unix.O_CLOEXEC | unix.O_NOFOLLOW),
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH,
		})
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // removed while listing
			}
			closeChildren(out)
			f.Close()
			return nil, fmt.Errorf("%s/%s: %w", root, n, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			closeChildren(out)
			f.Close()
			return nil, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(fd)
			if pat := protect.Except(n, unprotected); pat != "" {
				closeChildren(out)
				f.Close()
				return nil, tampered("%s/%s is a symlink, and %s is a protected name: refusing to start (whatever it points to would be writable through it). If you made it, replace it with the real file, or unprotect %q in the policy", root, n, n, pat)
			}
			continue
		}
		out = append(out, child{name: n, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	f.Close()
	return out, nil
}

// openSystemPath opens a system path (a runtime pack's, below / alone),
// following symlinks as the engine will.
func openSystemPath(p string) (int, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("mount source %s: %w", p, err)
	}
	return fd, nil
}
