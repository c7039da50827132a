package launch

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// An engine entry's inline `run` arguments run only when they are, word
// for word, what the pinned artefact expands to (artefact.EngineArgs).

// EngineRequired reads, from engine arguments the launcher verified, the
// protected names left writable and the programs the entry must pin.
func EngineRequired(args []string) (unprotected, pins []string) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--label" {
			continue
		}
		k, v, _ := strings.Cut(args[i+1], "=")
		switch k {
		case artefact.LabelUnprotect:
			unprotected = append(unprotected, v)
		case artefact.LabelProgramPin:
			pins = append(pins, v)
		}
		i++
	}
	return unprotected, pins
}

// UnprotectFlags refuses the launcher's --unprotect flags: engine entries
// once carried the unprotected names so, outside the pinned arguments, and
// one added by hand left .git writable unseen. The names now come from
// the pinned artefact (artefact.LabelUnprotect; bwrap's spec holds its own).
func UnprotectFlags(names []string) error {
	if len(names) == 0 {
		return nil
	}
	return tampered("--unprotect %s: the launcher takes the names a policy unprotects from the pinned artefact alone, and an entry's flag is what a hand edit adds (or an entry written before they were pinned): refusing to start; run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff; a name the server must write belongs in the policy's unprotect", strings.Join(names, ", --unprotect "))
}

// EnginePinned returns the entry's inline `run` arguments when they are
// exactly what the pinned artefact expands to for root and home; any
// other word — a --mount added by hand, a flag changed or dropped — is a
// TamperError naming the first difference and the way back. pinned is
// the file as the entry names it, digest the entry's --sha256.
func EnginePinned(pinned, digest, root, home string, inline []string) ([]string, error) {
	return EnginePinnedShown(pinned, digest, root, root, home, inline)
}

// EnginePinnedShown is EnginePinned for an entry that shows the project
// root as shown ("." in a portable entry, whose paths are relative to the
// root the client gives): the inline arguments must be the artefact
// expanded for shown, and the arguments run are its expansion for root.
func EnginePinnedShown(pinned, digest, root, shown, home string, inline []string) ([]string, error) {
	back := "run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff; a change the server needs belongs in the policy"
	if pinned == "" || digest == "" {
		return nil, tampered("the engine entry pins no artefact (--sha256 HEX .mcpolicy/docker/SERVER.json before --): its arguments cannot be checked against the reviewed plan, refusing to start; %s", back)
	}
	// A hand-edited root, the arguments expanded to match, would rebase
	// every ${PROJECT_ROOT} grant.
	if err := PinnedRoot(pinned, root); err != nil {
		return nil, err
	}
	b, err := ReadVerified(pinned, digest)
	if err != nil {
		return nil, err
	}
	want, err := artefact.EngineArgs(b, shown, home)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", pinned, err)
	}
	for i := 0; i < len(want) || i < len(inline); i++ {
		switch {
		case i >= len(inline):
			return nil, tampered("the entry's engine arguments are not the reviewed plan's (%s): word %d, %q, is missing from the entry — edited by hand? Refusing to start; %s", pinned, i+1, want[i], back)
		case i >= len(want):
			return nil, tampered("the entry's engine arguments are not the reviewed plan's (%s): word %d, %q, is not in the plan — added by hand? Refusing to start; %s", pinned, i+1, inline[i], back)
		case inline[i] != want[i]:
			return nil, tampered("the entry's engine arguments are not the reviewed plan's (%s): word %d is %q, the plan's is %q — edited by hand? Refusing to start; %s", pinned, i+1, inline[i], want[i], back)
		}
	}
	if shown == root {
		return want, nil
	}
	return artefact.EngineArgs(b, root, home)
}

// PinnedRoot refuses a project root that is not the pinned artefact's own
// project (ROOT/.mcpolicy/BACKEND/SERVER.json, as build writes it and
// entries and wrappers name it): the digest pins the artefact, and the
// root decides where each of its ${PROJECT_ROOT} grants lands, so an entry
// edited by hand to another root (the home, /) would mount that folder in
// the project's place, read-write where the policy says so.
func PinnedRoot(pinned, root string) error {
	abs, err := filepath.Abs(pinned)
	if err == nil && filepath.Clean(root) == filepath.Dir(filepath.Dir(filepath.Dir(abs))) {
		return nil
	}
	return tampered("--project-root %s is not the project of the pinned artefact %s (ROOT/.mcpolicy/BACKEND/SERVER.json): a hand-edited root would move every project grant there; refusing to start; run `mcpolicy client TARGET --write` again, and review the diff", root, pinned)
}
