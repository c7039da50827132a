package launch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// kind tells docker from podman: their options differ (the scratch's
// owner, --umask). The engine's binary says which it is in its Go build
// information, read without starting it (a CLI start costs 10-30 ms per
// launch): native is true then, and the launcher may read the engine's
// store as that CLI would. A binary that says neither — podman-docker's
// shell script, a wrapper — is asked (`ENGINE --version`), as before, and
// only ever run. The binary is as trusted as its answer: the launcher
// refuses an engine below a grant.
func (e Engine) kind() (podman, native bool, err error) {
	if podman, ok := builtKind(e.Path); ok {
		return podman, true, nil
	}
	out, err := exec.Command(e.Path, "--version").Output()
	if err != nil {
		return false, false, fmt.Errorf("%s --version: %v: the scratch's owner and the server's umask are set by engine-specific options", e.Path, err)
	}
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(string(out))), artefact.PodmanVersion), false, nil
}

// builtKind reads the main package of the Go binary engine names: ok is
// false unless it is podman's or docker's CLI.
func builtKind(engine string) (podman, ok bool) {
	p, err := exec.LookPath(engine)
	if err != nil {
		return false, false
	}
	f, err := os.Open(p)
	if err != nil {
		return false, false
	}
	defer f.Close()
	main, ok := goMain(f)
	if !ok {
		return false, false
	}
	return kindOfMain(main)
}

// goMain reads the main package's path from a 64-bit little-endian ELF
// Go binary's build information (section .go.buildinfo, as Go 1.18 and
// later write it: the strings inline). debug/buildinfo would do it, and
// add every object format's reader to the launcher (600 KB).
func goMain(r io.ReaderAt) (string, bool) {
	var eh [64]byte
	if _, err := r.ReadAt(eh[:], 0); err != nil || string(eh[:4]) != "\x7fELF" || eh[4] != 2 || eh[5] != 1 {
		return "", false
	}
	le := binary.LittleEndian
	shoff, shentsize, shnum, shstrndx := le.Uint64(eh[0x28:]), int64(le.Uint16(eh[0x3a:])), int64(le.Uint16(eh[0x3c:])), int64(le.Uint16(eh[0x3e:]))
	if shentsize != 64 || shnum == 0 || shstrndx >= shnum || shnum > 1<<12 { // ELF64 section headers are 64 bytes
		return "", false
	}
	shdrs := make([]byte, shentsize*shnum)
	if _, err := r.ReadAt(shdrs, int64(shoff)); err != nil {
		return "", false
	}
	sh := func(i int64) (name uint32, off, size uint64) {
		b := shdrs[i*shentsize:]
		return le.Uint32(b), le.Uint64(b[0x18:]), le.Uint64(b[0x20:])
	}
	_, stroff, strsize := sh(shstrndx)
	if strsize > 1<<20 {
		return "", false
	}
	names := make([]byte, strsize)
	if _, err := r.ReadAt(names, int64(stroff)); err != nil {
		return "", false
	}
	for i := int64(0); i < shnum; i++ {
		name, off, size := sh(i)
		if int(name) < len(names) && bytes.HasPrefix(names[name:], []byte(".go.buildinfo\x00")) {
			return buildInfoMain(r, int64(off), size)
		}
	}
	return "", false
}

// buildInfoMain reads the section: a 32-byte header (magic, pointer size,
// flags: 2 for inline strings), the Go version and the module
// information, each a uvarint length and its bytes; the latter, between
// two 16-byte sentinels, begins "path\tMAIN\n".
func buildInfoMain(r io.ReaderAt, off int64, size uint64) (string, bool) {
	b := make([]byte, min(size, 1<<20))
	if n, _ := r.ReadAt(b, off); n != len(b) || n < 32 || string(b[:14]) != "\xff Go buildinf:" || b[15]&2 == 0 {
		return "", false
	}
	rest := b[32:]
	var strs [2]string
	for i := range strs {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return "", false
		}
		strs[i], rest = string(rest[w:w+int(n)]), rest[w+int(n):]
	}
	mod := strs[1]
	if len(mod) >= 33 && mod[len(mod)-17] == '\n' {
		mod = mod[16 : len(mod)-16]
	}
	line, _, _ := strings.Cut(mod, "\n")
	return strings.CutPrefix(line, "path\t")
}

// kindOfMain maps a binary's main package to the engine: podman's
// (github.com/containers/podman[/vN]/cmd/podman) or docker's CLI.
func kindOfMain(main string) (podman, ok bool) {
	if rest, found := strings.CutPrefix(main, "github.com/containers/podman/"); found {
		major, _, _ := strings.Cut(rest, "/")
		return true, rest == "cmd/podman" || rest == major+"/cmd/podman" && strings.HasPrefix(major, "v")
	}
	return false, main == "github.com/docker/cli/cmd/docker"
}
