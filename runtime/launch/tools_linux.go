package launch

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readBeneath reads rel below root (at most max bytes of a regular file),
// opened with openat2 without following a symlink anywhere below root:
// a server that can write in the project must not swap a reviewed file
// for a link to its own.
func readBeneath(root, rel string, max int64) ([]byte, error) {
	dir, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", root, err)
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   uint64(unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC),
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case err == nil:
	case errors.Is(err, unix.ENOENT):
		return nil, missingTools(root, rel)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return nil, tampered("%s/%s is, or passes through, a symlink: refusing to start (a server that can write in the project could point it at rules of its own); hint: remove the link and run `mcpolicy build`", root, rel)
	case errors.Is(err, unix.ENOSYS):
		return nil, &UnsupportedError{fmt.Errorf("openat2 is not available (Linux 5.6+): %s/%s cannot be opened without following symlinks", root, rel)}
	default:
		return nil, fmt.Errorf("%s/%s: %w", root, rel, err)
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, tampered("%s/%s is not a regular file (%s): refusing to start; hint: remove it and run `mcpolicy build`", root, rel, fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, tampered("%s/%s: %d bytes, more than the %d a file of this kind may have: refusing to start; hint: run `mcpolicy build`", root, rel, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = tampered("%s/%s grew past %d bytes while it was read: refusing to start", root, rel, max)
	}
	return b, err
}
