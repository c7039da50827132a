package artefact

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
)

// PodmanVersion begins podman's `--version` answer: the launcher asks an
// engine whether it is podman, whose options differ from docker's (the
// scratch's owner, --umask), since its path may have any name.
const PodmanVersion = backendtraits.Podman

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
	// (ProgramFlag), or the launch is refused.
	LabelProgramPin = "org.mcpolicy.pin"
	// LabelOptional names the target of a read-only bind of a runtime
	// pack's host path, one label each: the launcher drops the bind when
	// its source is missing at spawn, so the engine never creates one.
	LabelOptional = "org.mcpolicy.optional"
	// LabelTools is "sha256:HEX" of the server's tool-surface artefact
	// (ToolsPath), one label at most: the launcher runs the relay on the
	// stdio pipe with those bytes alone.
	LabelTools = "org.mcpolicy.tools"
)

// EngineArgs expands an engine artefact (a JSON array of `run` arguments,
// host paths as ${PROJECT_ROOT}/… and ${HOME}/… in mount sources and
// program pin labels) into the arguments an entry holds for this root and
// home. The entry writer (emit/docker) and the launcher both call it, so
// the two spell every word alike. root may be a client's variable
// (${workspaceFolder}), which the client expands before the launcher
// sees it.
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
		if label, p, ok := strings.Cut(out[i], "="); ok && out[i-1] == "--label" && (label == LabelProgramPin || label == LabelOptional) {
			p, err := expandBase(p, root, home)
			if err != nil {
				return nil, err
			}
			out[i] = label + "=" + p
			continue
		}
		if name, v, ok := strings.Cut(out[i], "="); ok && out[i-1] == "-e" && strings.HasPrefix(v, "${") {
			// A runtime pack's value below the home (GOMODCACHE=${HOME}/...).
			v, err := expandBase(v, root, home)
			if err != nil {
				return nil, err
			}
			out[i] = name + "=" + v
			continue
		}
		if out[i-1] == EngineHideFlag {
			h, err := ParseEngineHide(out[i])
			if err != nil {
				return nil, err
			}
			if h.Source, err = expandBase(h.Source, root, home); err != nil {
				return nil, err
			}
			if strings.HasPrefix(h.Target, "${HOME}") && strings.Trim(home, "/") == "" {
				return nil, fmt.Errorf("HOME is /: the target %s would be a path of the container's root", h.Target)
			}
			if h.Target, err = expandBase(h.Target, root, home); err != nil {
				return nil, err
			}
			out[i] = h.String()
			continue
		}
		if out[i-1] != "--mount" {
			// A "~/..." target, workdir or command word: ${HOME} or
			// ${HOME}/... (a --tmpfs's with its options), whole or
			// after "--flag=". Other placeholders stay as written.
			w, err := expandHomeWord(out[i], home)
			if err != nil {
				return nil, err
			}
			out[i] = w
			continue
		}
		m, err := ParseMount(out[i])
		if err != nil {
			return nil, err
		}
		if m.Source, err = expandBase(m.Source, root, home); err != nil {
			return nil, err
		}
		// A runtime pack's path below the home is bound at the same path.
		if strings.HasPrefix(m.Target, "${HOME}") && strings.Trim(home, "/") == "" {
			return nil, fmt.Errorf("HOME is /: the target %s would be a path of the container's root", m.Target)
		}
		if m.Target, err = expandBase(m.Target, root, home); err != nil {
			return nil, err
		}
		out[i] = m.String()
	}
	return out, nil
}

// expandHomeWord expands a word that is, or starts with, ${HOME}/ (or
// ":" for a --tmpfs's options), whole or after "--flag=".
func expandHomeWord(w, home string) (string, error) {
	flag, v := "", w
	if f, rest, ok := strings.Cut(w, "="); ok && strings.HasPrefix(f, "-") {
		flag, v = f+"=", rest
	}
	rest, ok := strings.CutPrefix(v, "${HOME}")
	if !ok || (rest != "" && rest[0] != '/' && rest[0] != ':') {
		return w, nil
	}
	if !strings.HasPrefix(home, "/") {
		return "", fmt.Errorf("${HOME} needs an absolute value to start this server")
	}
	if strings.Trim(home, "/") == "" {
		return "", fmt.Errorf("HOME is /: %s would be a path of the container's root", w)
	}
	return flag + strings.TrimSuffix(home, "/") + rest, nil
}

// Mount is one --mount value as the docker emitter writes it and the
// launcher checks it.
type Mount struct {
	Kind, Source, Target string
	ReadOnly             bool
	Extra                []string // other fields, as written
}

// ParseMount reads a --mount value the way docker and podman do (CSV).
func ParseMount(v string) (*Mount, error) {
	r := csv.NewReader(strings.NewReader(v))
	fields, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("--mount %q: %v", v, err)
	}
	m := &Mount{}
	seen := map[string]bool{}
	for _, f := range fields {
		k, val, _ := strings.Cut(f, "=")
		key := strings.ToLower(k)
		switch key {
		case "source", "src":
			key = "source"
		case "target", "destination", "dst":
			key = "target"
		case "readonly", "ro":
			key = "readonly"
		}
		if seen[key] {
			return nil, fmt.Errorf("--mount %q: %s given twice", v, key)
		}
		seen[key] = true
		switch strings.ToLower(k) {
		case "type":
			m.Kind = val
		case "source", "src":
			m.Source = val
		case "target", "destination", "dst":
			m.Target = val
		case "readonly", "ro":
			m.ReadOnly = val == "" || val == "true" || val == "1"
		default:
			m.Extra = append(m.Extra, f)
		}
	}
	// Only what mcpolicy emits: a bind, spelled so. Any other type went
	// through unchecked, and the engine reads "BIND" as a bind too: a
	// hand-edited entry mounted / at /host past every check (red team);
	// no type at all is a volume.
	if m.Kind != "bind" {
		return nil, fmt.Errorf("--mount %q: only type=bind, as mcpolicy emits it, is accepted (the launcher checks every mount's source)", v)
	}
	if m.Source == "" || m.Target == "" {
		return nil, fmt.Errorf("--mount %q: a bind needs a source and a target", v)
	}
	return m, nil
}

func (m *Mount) String() string {
	fields := []string{"type=" + m.Kind, "source=" + m.Source, "target=" + m.Target}
	if m.ReadOnly {
		fields = append(fields, "readonly")
	}
	fields = append(fields, m.Extra...)
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write(fields)
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// engineOperands are the `run` flags an engine artefact may hold, with how
// many values each takes (--mount's one is read by ParseMount). The docker
// emitter writes no other (golden/contract_test.go holds every golden
// artefact to this), and the launcher refuses any other: it must
// understand every word to check the mounts.
var engineOperands = map[string]int{
	"--rm": 0, "-i": 0, "-d": 0, "--read-only": 0,
	"--network": 1, "--cap-drop": 1, "--security-opt": 1, "--user": 1, "--tmpfs": 1,
	"-e": 1, "--memory": 1, "--memory-swap": 1, "--pids-limit": 1, "--cpus": 1,
	"--workdir": 1, "--label": 1, "--name": 1, "--entrypoint": 1, "--read-only-tmpfs=false": 0,
	"--mount": 1,
	// Launcher-only: a hidden path below a mount (EngineHide), expanded
	// and masked at spawn; no engine has this flag.
	EngineHideFlag: 1,
}

// EngineHideFlag is the launcher-only flag of an engine artefact that
// hides the paths below a mount's source matching a pattern; its value is
// an EngineHide. A launcher that does not know it refuses the artefact.
const EngineHideFlag = "--mcpolicy-hide"

// EngineHide is the value of EngineHideFlag: "source=S,target=T,pattern=P"
// (CSV, as a --mount).
type EngineHide struct {
	Source, Target, Pattern string
}

// ParseEngineHide reads an EngineHideFlag's value.
func ParseEngineHide(v string) (*EngineHide, error) {
	fields, err := csv.NewReader(strings.NewReader(v)).Read()
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", EngineHideFlag, v, err)
	}
	h := &EngineHide{}
	for _, f := range fields {
		k, val, _ := strings.Cut(f, "=")
		var p *string
		switch k {
		case "source":
			p = &h.Source
		case "target":
			p = &h.Target
		case "pattern":
			p = &h.Pattern
		default:
			return nil, fmt.Errorf("%s %q: unknown field %q", EngineHideFlag, v, k)
		}
		if *p != "" {
			return nil, fmt.Errorf("%s %q: %s given twice", EngineHideFlag, v, k)
		}
		*p = val
	}
	if h.Source == "" || h.Target == "" || h.Pattern == "" {
		return nil, fmt.Errorf("%s %q: needs a source, a target and a pattern", EngineHideFlag, v)
	}
	return h, nil
}

func (h *EngineHide) String() string {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"source=" + h.Source, "target=" + h.Target, "pattern=" + h.Pattern})
	w.Flush()
	return strings.TrimSuffix(b.String(), "\n")
}

// EngineOperands reports how many values an engine artefact's `run` flag
// takes, and whether the contract knows it at all.
func EngineOperands(flag string) (n int, known bool) {
	n, known = engineOperands[flag]
	return n, known
}
