package launch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// expandHidden matches one pattern in its folder below source: the folder
// opened without following a symlink (one missing hides nothing), its
// names read once, no recursion. A match that is a symlink, or a file
// with another hard link, is refused: masking that name would leave the
// content readable under the other.
func (s *Sources) expandHidden(source, pat string) ([]hideMatch, error) {
	dir, glob := path.Split(pat)
	dir = path.Clean("./" + dir)
	dfd, err := s.OpenDir(path.Join(source, dir))
	if err != nil {
		if IsMissingSource(err) {
			return nil, nil // nothing there to hide
		}
		return nil, fmt.Errorf("hidden path %q of %s: %w", pat, source, err)
	}
	f := os.NewFile(uintptr(dfd), path.Join(source, dir))
	defer f.Close()
	names, err := f.Readdirnames(maxHideEntries + 1)
	if err != nil && len(names) == 0 && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("listing %s: %w", f.Name(), err)
	}
	if len(names) > maxHideEntries {
		return nil, fmt.Errorf("hidden path %q: %s has more than %d entries to match it against; hide a folder nearer the files", pat, f.Name(), maxHideEntries)
	}
	var out []hideMatch
	for _, n := range names {
		if ok, _ := path.Match(glob, n); !ok {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if IsMissing(err) {
				continue // removed while listing
			}
			return nil, fmt.Errorf("%s/%s: %w", f.Name(), n, err)
		}
		rel := path.Join(dir, n)
		full := path.Join(source, rel)
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			return nil, tampered("%s matches the hidden path %q and is a symlink: refusing to start (masking the link leaves what it points to readable by its own name). Hide the file it points to by that path, and remove the link or narrow the pattern: `ls -la %s`", full, pat, full)
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			out = append(out, hideMatch{rel: rel, dir: true})
		case st.Nlink > 1:
			return nil, tampered("%s matches the hidden path %q and has %d hard links: refusing to start (its content stays readable under its other name). Give it one name: `find %s -samefile %s` lists the others", full, pat, st.Nlink, source, full)
		default:
			out = append(out, hideMatch{rel: rel})
		}
	}
	return out, nil
}

// maskSources are the launcher's empty folder and empty file of mode 0000
// that an engine binds read-only over each hidden match: in a folder of
// its own (mode 0700, the user's) below $XDG_RUNTIME_DIR, or the temporary
// folder, which no policy grants. Created once, checked at every launch:
// a folder of another owner or mode, or a link, is refused.
func maskSources() (dir, file string, err error) {
	base := os.Getenv("XDG_RUNTIME_DIR")
	if !path.IsAbs(base) {
		base = os.TempDir()
	}
	uid := os.Geteuid()
	home := path.Join(base, fmt.Sprintf("mcpolicy-masks-%d", uid))
	if err := os.Mkdir(home, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", "", fmt.Errorf("the hidden paths' masks: %w", err)
	}
	if err := checkMask(home, unix.S_IFDIR, 0o700, uid); err != nil {
		return "", "", err
	}
	dir, file = path.Join(home, "dir"), path.Join(home, "file")
	if err := os.Mkdir(dir, 0); err != nil && !errors.Is(err, os.ErrExist) {
		return "", "", fmt.Errorf("the hidden paths' masks: %w", err)
	}
	if fd, err := unix.Open(file, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(fd)
	} else if !errors.Is(err, unix.EEXIST) {
		return "", "", fmt.Errorf("the hidden paths' masks: %s: %w", file, err)
	}
	for _, c := range []struct {
		p    string
		kind uint32
	}{{dir, unix.S_IFDIR}, {file, unix.S_IFREG}} {
		// Created with mode 0: a umask only narrows it.
		if err := checkMask(c.p, c.kind, 0, uid); err != nil {
			return "", "", err
		}
	}
	return dir, file, nil
}

// checkMask refuses p unless it is of kind, with mode perm, owned by uid,
// and (a file) empty.
func checkMask(p string, kind uint32, perm uint32, uid int) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fmt.Errorf("the hidden paths' masks: %w", err)
	}
	if st.Mode&unix.S_IFMT != kind || st.Mode&0o7777 != perm || int(st.Uid) != uid || kind == unix.S_IFREG && st.Size != 0 {
		return tampered("%s is not the launcher's own mask (%s, mode %o, owner %d, %d bytes): refusing to start; remove it and start again", p, Kind(p), st.Mode&0o7777, st.Uid, st.Size)
	}
	return nil
}

// openMask opens a mask without following a link, for the verifier.
func openMask(p string, dir bool) (int, error) {
	flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if dir {
		flags |= unix.O_DIRECTORY
	}
	fd, err := unix.Open(p, flags, 0)
	if err != nil {
		return -1, fmt.Errorf("the hidden paths' mask %s: %w", p, err)
	}
	return fd, nil
}
