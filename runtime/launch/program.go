package launch

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// programPin parses PATH=[sha256:]HEX into an absolute clean path and the
// 64 hex digits.
func programPin(v string) (string, string, error) {
	i := strings.LastIndex(v, "=")
	if i < 0 {
		return "", "", fmt.Errorf("--%s %q: want PATH=sha256:HEX", artefact.ProgramFlag, v)
	}
	p, d := v[:i], strings.ToLower(strings.TrimPrefix(v[i+1:], "sha256:"))
	if !filepath.IsAbs(p) || len(d) != 64 || strings.Trim(d, "0123456789abcdef") != "" {
		return "", "", fmt.Errorf("--%s %q: want an absolute PATH and the 64 hex digits of its SHA-256", artefact.ProgramFlag, v)
	}
	return filepath.Clean(p), d, nil
}

// CheckPrograms checks each pinned program (the entry's --program-sha256
// values) against the file's bytes, opened below the project root, the
// home or / without following a symlink; and that every file the artefact
// requires pinned (its programPins, with ${PROJECT_ROOT} and ${HOME}) is.
// Any failure is a TamperError: nothing starts.
func CheckPrograms(required, pins []string, root, home string) error {
	want := map[string]string{}
	for _, v := range pins {
		p, d, err := programPin(v)
		if err != nil {
			return err
		}
		want[p] = d
	}
	for _, r := range required {
		p := filepath.Clean(expandBase(r, root, home))
		if _, ok := want[p]; !ok {
			return tampered("%s is this server's program, and a read-write grant of a server in the policy holds it: the artefact requires its digest pinned, and the client entry carries none (--%s): refusing to start it. Check that the file is yours, then run `mcpolicy client TARGET --write` to write the entry again (by hand: --%s %s=sha256:HEX of the bytes you checked)", p, artefact.ProgramFlag, artefact.ProgramFlag, p)
		}
	}
	src := NewSources(root, home)
	for p, d := range want {
		got, err := src.digest(p)
		if err != nil {
			return err
		}
		if got != d {
			return tampered("%s has changed since the client entry was written (sha256 %s, entry expects sha256:%s): a server whose read-write grant holds it may have rewritten it, and it would run with this server's grants: refusing to start it. If you rebuilt it yourself, check that it is yours, then run `mcpolicy client TARGET --write` to pin it again", p, got, d)
		}
	}
	return nil
}

// ProgramDigest is the digest the client entry pins for a program: its
// bytes as the launcher will read them ("sha256:HEX").
func ProgramDigest(p, root, home string) (string, error) {
	d, err := NewSources(root, home).digest(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	return "sha256:" + d, nil
}

// expandBase replaces a leading ${PROJECT_ROOT} or ${HOME}.
func expandBase(p, root, home string) string {
	for ph, v := range map[string]string{"${PROJECT_ROOT}": root, "${HOME}": home} {
		if p == ph || strings.HasPrefix(p, ph+"/") {
			return v + strings.TrimPrefix(p, ph)
		}
	}
	return p
}
