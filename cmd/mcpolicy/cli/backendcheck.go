package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/emit/registry"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/editdist"
)

// backendElsewhere says, for a backend a command refuses but mcpolicy
// knows, what starts it instead, by the kind of sandbox it runs in.
var backendElsewhere = map[string]map[artefact.Sandbox]string{
	"run": {
		artefact.Landlock: "mcpolicy exec starts a server under its Landlock ruleset",
		artefact.Cluster:  "a cluster starts it, from the manifest mcpolicy build writes",
	},
}

// checkBackend refuses a --backend the command does not accept, before
// the command compiles or prints anything: the error names the nearest
// backend it accepts (never one it refuses), and the ones it accepts.
// Empty is accepted: the command's default.
func checkBackend(command, name string, accepted []string) error {
	if name == "" || slices.Contains(accepted, name) {
		return nil
	}
	var msg string
	if b, err := registry.Lookup(name); err == nil {
		msg = fmt.Sprintf("--backend %s: %s does not start it", name, command)
		if how := backendElsewhere[command][b.Runtime().Sandbox]; how != "" {
			msg += " (" + how + ")"
		}
	} else {
		msg = fmt.Sprintf("--backend %q: no such backend", name)
		if near := nearest(name, accepted); near != "" {
			msg += "; did you mean " + near + "?"
		}
	}
	msg += fmt.Sprintf("; %s takes %s", command, orList(accepted))
	return &exitError{code: ExitError, err: fmt.Errorf("%s", msg)}
}

// nearest is the name of names closest to s, when it is close enough to
// be a slip (a third of its length, at least 2 edits); else "".
func nearest(s string, names []string) string {
	best, bestD := "", max(2, len(s)/3)+1
	for _, n := range names {
		if d := editdist.Distance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
