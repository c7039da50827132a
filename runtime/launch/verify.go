package launch

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/exitcode"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// ExitTampered is the launcher's exit code when what it was asked to run is
// not what was reviewed: an artefact whose hash differs from the one the
// client entry carries, or a mount source that is (or passes through) a
// symlink or leaves its base. Nothing is started.
const ExitTampered = exitcode.Tampered

// TamperError is a refusal with exit code ExitTampered.
type TamperError struct{ Err error }

func (e *TamperError) Error() string { return e.Err.Error() }
func (e *TamperError) Unwrap() error { return e.Err }

func tampered(format string, args ...any) error {
	return &TamperError{fmt.Errorf(format, args...)}
}

// ReadVerified reads an artefact once and returns its bytes only when their
// digest is want ("sha256:HEX" or HEX). The caller uses these bytes and
// never reads the file again, so a rewrite after the check changes nothing.
func ReadVerified(path, want string) ([]byte, error) {
	want = strings.ToLower(strings.TrimPrefix(want, "sha256:"))
	if len(want) != 64 {
		return nil, fmt.Errorf("--sha256 %q: want the 64 hex digits of the artefact's SHA-256", want)
	}
	// Not os.ReadFile: a FIFO put there would hold the launch, a link to
	// /dev/zero read until memory ran out.
	b, err := hostfile.ReadRegular(path, hostfile.MaxArtefact)
	if err != nil {
		return nil, err
	}
	if got := artefact.Digest(b); got != "sha256:"+want {
		return nil, tampered("%s has been modified since the client entry was written (it is %s, the entry pins sha256:%s): refusing to start it. If you changed the policy, run `mcpolicy build` and `mcpolicy client TARGET --write` again and review the diff; if not, something rewrote the artefact — a server with write access to it?", path, got, want)
	}
	return b, nil
}
