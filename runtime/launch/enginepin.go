package launch

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"strings"
)

// An engine entry carries the `run` arguments inline, readable in the
// client file, and pins the reviewed artefact (.mcpolicy/docker/S.json) by
// its digest. The inline arguments are what a hand edit changes — "a mount
// added on a Tuesday to unblock someone" — so the launcher runs them only
// when they are, word for word, what the pinned artefact expands to.

// What the launcher must enforce beyond the engine's own arguments rides
// in the artefact as labels, harmless to the engines, so the word-for-word
// comparison pins it too: a flag of the launcher's own, outside the
// comparison, is what a hand edit could add unseen.
const (
	// LabelUnprotect names a protected name the policy unprotects, one
	// label each: the fixed top level leaves it writable.
	LabelUnprotect = "org.mcpolicy.unprotect"
	// LabelProgramPin names a program the server runs that a read-write
	// grant holds, one label each: the entry must pin its digest
	// (--program-sha256), or the launch is refused.
	LabelProgramPin = "org.mcpolicy.pin"
)

// EngineRequired reads, from engine arguments the launcher verified, the
// protected names left writable and the programs the entry must pin.
func EngineRequired(args []string) (unprotected, pins []string) {
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "--label" {
			continue
		}
		k, v, _ := strings.Cut(args[i+1], "=")
		switch k {
		case LabelUnprotect:
			unprotected = append(unprotected, v)
		case LabelProgramPin:
			pins = append(pins, v)
		}
		i++
	}
	return unprotected, pins
}

// UnprotectFlags refuses the launcher's --unprotect flags: engine entries
// once carried the unprotected names so, outside the pinned arguments, and
// one added by hand left .git writable unseen. The names now come from
// the pinned artefact (LabelUnprotect; bwrap's spec holds its own).
func UnprotectFlags(names []string) error {
	if len(names) == 0 {
		return nil
	}
	return tampered("--unprotect %s: the launcher takes the names a policy unprotects from the pinned artefact alone, and an entry's flag is what a hand edit adds (or an entry written before they were pinned): refusing to start; run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff; a name the server must write belongs in the policy's unprotect", strings.Join(names, ", --unprotect "))
}

// EngineArgs expands an engine artefact (a JSON array of `run` arguments,
// host paths as ${PROJECT_ROOT}/… and ${HOME}/… in mount sources and
// program pin labels) into the arguments an
// entry holds for this root and home. The entry writer (emit/docker) and
// the launcher both call it, so the two spell every word alike. root may
// be a client's variable (${workspaceFolder}), which the client expands
// before the launcher sees it.
func EngineArgs(artefact []byte, root, home string) ([]string, error) {
	var args []string
	if err := json.Unmarshal(artefact, &args); err != nil {
		return nil, fmt.Errorf("not an engine artefact (a JSON array of arguments): %v", err)
	}
	out := make([]string, len(args))
	copy(out, args)
	for i := 1; i < len(out); i++ {
		if !strings.Contains(out[i], "${") {
			continue
		}
		if p, ok := strings.CutPrefix(out[i], LabelProgramPin+"="); ok && out[i-1] == "--label" {
			p, err := expandHostPath(p, root, home)
			if err != nil {
				return nil, err
			}
			out[i] = LabelProgramPin + "=" + p
			continue
		}
		if out[i-1] != "--mount" {
			continue
		}
		m, err := parseMount(out[i])
		if err != nil {
			return nil, err
		}
		if m.source, err = expandHostPath(m.source, root, home); err != nil {
			return nil, err
		}
		out[i] = m.String()
	}
	return out, nil
}

// expandHostPath replaces the ${PROJECT_ROOT} or ${HOME} a host path
// starts with; an empty value would turn "${HOME}/x" into "/x".
func expandHostPath(p, root, home string) (string, error) {
	for _, ph := range []struct{ name, v string }{{"${PROJECT_ROOT}", root}, {"${HOME}", home}} {
		if p == ph.name || strings.HasPrefix(p, ph.name+"/") {
			if ph.v == "" {
				return "", fmt.Errorf("%s in %q has no value here", ph.name, p)
			}
			// Clean, as the writer's resolver: $HOME may end in a slash.
			return strings.TrimSuffix(path.Clean(ph.v), "/") + strings.TrimPrefix(p, ph.name), nil
		}
	}
	if strings.Contains(p, "${") {
		return "", fmt.Errorf("unknown placeholder in %q", p)
	}
	return p, nil
}

// EnginePinned returns the entry's inline `run` arguments when they are
// exactly what the pinned artefact expands to for root and home; any
// other word — a --mount added by hand, a flag changed or dropped — is a
// TamperError naming the first difference and the way back. artefact is
// the file as the entry names it, digest the entry's --sha256.
func EnginePinned(artefact, digest, root, home string, inline []string) ([]string, error) {
	back := "run `mcpolicy build`, then `mcpolicy client TARGET --write`, and review the diff; a change the server needs belongs in the policy"
	if artefact == "" || digest == "" {
		return nil, tampered("the engine entry pins no artefact (--sha256 HEX .mcpolicy/docker/SERVER.json before --): its arguments cannot be checked against the reviewed plan, refusing to start; %s", back)
	}
	// A hand-edited root, the arguments expanded to match, would rebase
	// every ${PROJECT_ROOT} grant.
	if err := PinnedRoot(artefact, root); err != nil {
		return nil, err
	}
	b, err := ReadVerified(artefact, digest)
	if err != nil {
		return nil, err
	}
	want, err := EngineArgs(b, root, home)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", artefact, err)
	}
	for i := 0; i < len(want) || i < len(inline); i++ {
		switch {
		case i >= len(inline):
			return nil, tampered("the entry's engine arguments are not the reviewed plan's (%s): word %d, %q, is missing from the entry — edited by hand? Refusing to start; %s", artefact, i+1, want[i], back)
		case i >= len(want):
			return nil, tampered("the entry's engine arguments are not the reviewed plan's (%s): word %d, %q, is not in the plan — added by hand? Refusing to start; %s", artefact, i+1, inline[i], back)
		case inline[i] != want[i]:
			return nil, tampered("the entry's engine arguments are not the reviewed plan's (%s): word %d is %q, the plan's is %q — edited by hand? Refusing to start; %s", artefact, i+1, inline[i], want[i], back)
		}
	}
	return want, nil
}

// PinnedRoot refuses a project root that is not the pinned artefact's own
// project (ROOT/.mcpolicy/BACKEND/SERVER.json, as build writes it and
// entries and wrappers name it): the digest pins the artefact, and the
// root decides where each of its ${PROJECT_ROOT} grants lands, so an entry
// edited by hand to another root (the home, /) would mount that folder in
// the project's place, read-write where the policy says so.
func PinnedRoot(artefact, root string) error {
	abs, err := filepath.Abs(artefact)
	if err == nil && filepath.Clean(root) == filepath.Dir(filepath.Dir(filepath.Dir(abs))) {
		return nil
	}
	return tampered("--project-root %s is not the project of the pinned artefact %s (ROOT/.mcpolicy/BACKEND/SERVER.json): a hand-edited root would move every project grant there; refusing to start; run `mcpolicy client TARGET --write` again, and review the diff", root, artefact)
}
