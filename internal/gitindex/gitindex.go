// Package gitindex reads the paths a git index (.git/index) tracks,
// versions 2, 3 and 4, without running git: which program git runs, and
// with what, is up to the project's own configuration, which a server
// may have been able to write. It is a leaf: the launcher links it.
package gitindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxIndex bounds what is read: an index this large is not a project's.
const maxIndex = 1 << 30

// Read returns the paths (slash-separated, relative to the work tree)
// that the index file at path tracks, each with the mode git recorded
// (0100644, 0100755, 0120000 for a symlink, 0160000 for a submodule).
func Read(path string) (map[string]uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > maxIndex {
		return nil, fmt.Errorf("%s: %d bytes: too large for an index", path, len(b))
	}
	// SHA-1 repositories hash with 20 bytes, SHA-256 ones with 32; the
	// index does not say which, the entries' layout does.
	names, err := Parse(b, 20)
	if err != nil {
		if n, err2 := Parse(b, 32); err2 == nil {
			names = n
			err = nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return names, nil
}

// Of returns the index of the work tree at root: root/.git/index, or
// the index of the git directory a .git file names (a worktree's).
func Of(root string) (string, error) {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", err
	}
	switch {
	case fi.IsDir():
		return filepath.Join(dotgit, "index"), nil
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return "", err
		}
		dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return "", fmt.Errorf("%s: no gitdir line", dotgit)
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		return filepath.Join(dir, "index"), nil
	}
	return "", fmt.Errorf("%s: neither a folder nor a file", dotgit)
}

var errShort = errors.New("truncated index")

// Parse reads an index's entries (path and mode), its object names
// hashLen bytes long.
func Parse(b []byte, hashLen int) (map[string]uint32, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errors.New("not a git index (no DIRC signature)")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d: only 2, 3 and 4 are read", version)
	}
	count := binary.BigEndian.Uint32(b[8:12])
	// The checksum trails the file: no entry may reach into it.
	end := len(b) - hashLen
	if end < 12 {
		return nil, errShort
	}
	fixed := 40 + hashLen + 2 // stat data, object name, flags
	names := make(map[string]uint32, min(int(count), end/fixed))
	off := 12
	var prev []byte
	for i := uint32(0); i < count; i++ {
		start := off
		if off+fixed > end {
			return nil, errShort
		}
		flags := binary.BigEndian.Uint16(b[off+fixed-2:])
		// ctime, mtime (8 bytes each), dev, ino, then the mode.
		mode := binary.BigEndian.Uint32(b[off+24:])
		off += fixed
		if flags&0x4000 != 0 { // extended flags
			if version < 3 {
				return nil, fmt.Errorf("entry %d: extended flags in a version %d index", i, version)
			}
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, n := varint(b[off:end])
			if n <= 0 || strip > uint64(len(prev)) {
				return nil, fmt.Errorf("entry %d: bad path prefix", i)
			}
			off += n
			nul := bytes.IndexByte(b[off:end], 0)
			if nul < 0 {
				return nil, errShort
			}
			name = append(append([]byte{}, prev[:uint64(len(prev))-strip]...), b[off:off+nul]...)
			off += nul + 1
		} else {
			nul := bytes.IndexByte(b[off:end], 0)
			if nul < 0 {
				return nil, errShort
			}
			name = b[off : off+nul]
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			off = start + (off+nul-start+8)&^7
			if off > end {
				return nil, errShort
			}
		}
		if len(name) == 0 {
			return nil, fmt.Errorf("entry %d: empty path", i)
		}
		names[string(name)] = mode
		prev = name
	}
	return names, nil
}

// varint is the offset encoding of index v4 (and of ofs-deltas): each
// continuation adds one before shifting.
func varint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i == 0 {
			v = uint64(c & 0x7f)
		} else {
			v = (v+1)<<7 | uint64(c&0x7f)
		}
		if c&0x80 == 0 {
			return v, i + 1
		}
		if i > 8 {
			return 0, -1
		}
	}
	return 0, -1
}
