package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// MaxPolicySize caps a policy file and each file a Jsonnet policy
// imports. A real policy is kilobytes (500 servers, bench's largest
// project, are about 150 KB); 4 MiB leaves room for any policy a person
// reviews, and keeps a 1 GiB file, or a link to /dev/zero, from being
// read whole into memory.
const MaxPolicySize = 4 << 20

// readPolicy reads a policy file or a file a policy imports, bounded: it
// is opened without waiting (a FIFO named like a policy held vet, build,
// lint and explain forever), must be a regular file (not a device, a
// FIFO or a folder) and at most MaxPolicySize bytes.
func readPolicy(file string) ([]byte, error) {
	f, fi, err := hostfile.OpenRegular(file)
	if err != nil {
		// The error's position names the file: the message says why.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("cannot be read as a policy: %s", strings.TrimPrefix(err.Error(), file+": "))
	}
	defer f.Close()
	if fi.Size() > MaxPolicySize {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxPolicySize+1))
	if err == nil && len(b) > MaxPolicySize {
		err = errTooLarge
	}
	return b, err
}

var errTooLarge = fmt.Errorf("larger than %d MiB, the most a policy file may have", MaxPolicySize>>20)

// readError is a file that could not be read, as an Error at the file, so
// a project reports it with the other files' problems.
func readError(file string, err error) Errors {
	hint := "a policy is a regular file of at most 4 MiB"
	if errors.Is(err, fs.ErrNotExist) {
		hint = ""
	}
	return Errors{{Pos: Pos{File: file}, Msg: err.Error(), Hint: hint}}
}

// utf8BOM is the byte order mark some editors (Notepad, Visual Studio)
// write at the start of a UTF-8 file.
var utf8BOM = []byte("\xef\xbb\xbf")

// trimBOM drops a byte order mark at the start of a policy source, in
// every format alike: the YAML and CUE readers skipped it, JSON refused
// it as "invalid character 'ï'" and Jsonnet could not lex it. Columns on
// line 1 are then counted without it, as an editor shows them.
func trimBOM(src []byte) []byte { return bytes.TrimPrefix(src, utf8BOM) }

// badText reports the first byte of a policy source that is not text: a
// byte that is not UTF-8 (Jsonnet read it as U+FFFD, the YAML decoder
// said so without a line), a control character other than a tab or a
// line break (a NUL, which no policy format holds outside an escape), or
// a byte order mark past the start (trimBOM drops the one at the start):
// it is invisible, and YAML read it as a syntax error a line later.
func badText(file string, src []byte) *Error {
	for i := 0; i < len(src); {
		r, n := utf8.DecodeRune(src[i:])
		var msg, hint string
		switch {
		case r == utf8.RuneError && n == 1:
			msg, hint = fmt.Sprintf("byte 0x%02x is not UTF-8 text", src[i]), "save the policy as UTF-8"
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f:
			msg, hint = fmt.Sprintf("control character %U in the file", r), "write a control character in a string as an escape (\\u0000)"
		case r == '\ufeff':
			msg, hint = "a byte order mark (U+FEFF) inside the file", "delete it: it is invisible in an editor, and only the start of a file may hold one (two files pasted together?)"
		}
		if msg != "" {
			line := bytes.Count(src[:i], []byte("\n")) + 1
			col := i - bytes.LastIndexByte(src[:i], '\n') // in bytes
			return &Error{Pos: Pos{File: file, Line: line, Col: col}, Msg: msg, Hint: hint}
		}
		i += n
	}
	return nil
}
