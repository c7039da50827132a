package launch

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Load returns the values the file holds for names, checking the file
// first. A name the file does not hold is not an error here (the caller's
// environment may have it): Missing tells which are in neither.
func (f EnvFile) Load(names []string) (map[string]string, error) {
	if !filepath.IsAbs(f.Path) {
		return nil, fmt.Errorf("env file %q: not an absolute path", f.Path)
	}
	p := filepath.Clean(f.Path)
	if g, in := InsideAny(p, f.Grants); in {
		return nil, tampered("env file %s lies inside %s, which the server is given: it could read every secret in the file, or choose the values of the next launch; keep it outside every grant (the default is ~/.config/mcpolicy/env)", p, g)
	}
	root, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, strings.TrimPrefix(p, "/"), &unix.OpenHow{
		Flags:   uint64(unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOCTTY | unix.O_NONBLOCK),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, tampered("env file %s is, or passes through, a symlink: refusing to read it (a link can be swapped to point anywhere); name the file by its real path", p)
	case errors.Is(err, unix.ENOSYS):
		return nil, &UnsupportedError{fmt.Errorf("openat2 is not available (Linux 5.6+): the env file cannot be opened without following symlinks")}
	case err != nil:
		return nil, fmt.Errorf("env file %s: %w (create it with `install -m 600 /dev/null %s`, then add NAME=value lines)", p, err, p)
	}
	file := os.NewFile(uintptr(fd), p)
	defer file.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("env file %s: not a regular file", p)
	case st.Nlink != 1:
		return nil, tampered("env file %s has %d hard links: a link inside a grant would reach it; keep one", p, st.Nlink)
	case int(st.Uid) != os.Getuid():
		return nil, fmt.Errorf("env file %s belongs to uid %d, not to you (uid %d): refusing to take secrets from it", p, st.Uid, os.Getuid())
	case st.Mode&0o077 != 0:
		return nil, fmt.Errorf("env file %s can be read or written by others (mode %04o): run `chmod 600 %s`", p, st.Mode&0o7777, p)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(file); err != nil {
		return nil, fmt.Errorf("env file %s: %w", p, err)
	}
	all, err := ParseEnvFile(p, buf.Bytes())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		if v, ok := all[n]; ok {
			out[n] = v
		}
	}
	return out, nil
}
