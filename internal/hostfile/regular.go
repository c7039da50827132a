package hostfile

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// ReadRegular reads a file a server may have put or replaced (a pinned
// artefact, a client config, a profile an entry names): without waiting
// (a FIFO there held `mcpolicy check` forever), only a regular file (a
// link to /dev/zero read until memory ran out), and at most max bytes (a
// sparse 64 GB file did the same). Links are followed, as the user's
// configs use them; what is read is checked for what it is.
func ReadRegular(path string, max int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d a file of this kind may have", path, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: more than the %d bytes a file of this kind may have", path, max)
	}
	return b, err
}

// OpenRegular opens path for reading without waiting (a FIFO a server
// put there does not hold the caller) and refuses anything but a regular
// file; the file is checked once opened, whatever the path says now.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file (%s)", path, kind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// Limits of ReadRegular for what mcpolicy reads: an artefact it wrote,
// a client's config (Claude Code's ~/.claude.json keeps a history and
// grows to megabytes).
const (
	MaxArtefact = 16 << 20
	MaxConfig   = 64 << 20
)

// kind names what a file that is not a regular one is, in words.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe, FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}
