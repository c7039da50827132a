package artefact

import (
	"fmt"
	"slices"
	"strings"
)

// RunEntry is what a client entry's `mcpolicy run` command line says: start
// the plan build wrote for a server (ROOT/.mcpolicy/plan/SERVER.json),
// once its digest is the one the entry pins, for the project at
// ProjectRoot, on Backend. No policy is read at spawn.
type RunEntry struct {
	Backend     string
	ProjectRoot string
	PlanFile    string
	Digest      string // "sha256:HEX" of the plan file
	EnvFile     string // where the env grants' values are read from ("": the environment)
}

// RunEntryArgs is the command line (after the mcpolicy executable) that
// starts e: `run --backend B --project-root ROOT [--env-file F] --sha256
// DIGEST PLANFILE`. ParseRunEntry reads it back.
func RunEntryArgs(e RunEntry) []string {
	args := []string{"run", "--backend", e.Backend, "--project-root", e.ProjectRoot}
	if e.EnvFile != "" {
		args = append(args, "--env-file", e.EnvFile)
	}
	return append(args, "--sha256", e.Digest, e.PlanFile)
}

// RunPolicyArgs is the command line that starts server by hand: `run
// --policy POLICY --server S --backend B`, which compiles the policy
// first (prove's reproductions, a person at a terminal).
func RunPolicyArgs(policy, server, backend string) []string {
	return []string{"run", "--policy", policy, "--server", server, "--backend", backend}
}

// ParseRunEntry reads a command line RunEntryArgs wrote (args after the
// executable). ok is false for any other mcpolicy command line, and err
// says what is wrong with a `run --sha256` line that is not one.
func ParseRunEntry(args []string) (e RunEntry, ok bool, err error) {
	if len(args) == 0 || args[0] != "run" || !slices.Contains(args, "--sha256") {
		return RunEntry{}, false, nil
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if i == len(args)-1 && !strings.HasPrefix(a, "-") && e.PlanFile == "" {
			e.PlanFile = a
			continue
		}
		if !strings.HasPrefix(a, "-") || a == "--" {
			return RunEntry{}, true, fmt.Errorf("mcpolicy run: %s: a client entry's line ends with its one plan file, and nothing follows it", a)
		}
		if i+1 >= len(args) {
			return RunEntry{}, true, fmt.Errorf("mcpolicy run %s: no value", a)
		}
		v := args[i+1]
		i++
		switch a {
		case "--backend":
			e.Backend = v
		case "--project-root":
			e.ProjectRoot = v
		case "--env-file":
			e.EnvFile = v
		case "--sha256":
			e.Digest = v
		default:
			return RunEntry{}, true, fmt.Errorf("mcpolicy run: %s is not part of a client entry's command line", a)
		}
	}
	if e.Backend == "" || e.ProjectRoot == "" || e.Digest == "" || e.PlanFile == "" {
		return RunEntry{}, true, fmt.Errorf("mcpolicy run: a client entry names --backend, --project-root, --sha256 and the plan file")
	}
	return e, true, nil
}

// LegacyRunEntry reports whether args are the entry earlier versions
// wrote for an egress server, `run --policy ROOT --server S ... --plan
// HASH`: it compiled the policy at every spawn, and is rewritten by
// `mcpolicy client TARGET --write`.
func LegacyRunEntry(args []string) bool {
	return len(args) > 0 && args[0] == "run" && slices.Contains(args, "--policy") && slices.Contains(args, "--plan")
}
