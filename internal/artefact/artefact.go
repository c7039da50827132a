// Package artefact is the contract between the emitters that write a
// server's committed artefacts (.mcpolicy/BACKEND/SERVER.json) and the
// launcher that starts a server from them: the formats (the bwrap spec,
// the Landlock ruleset, an engine's `run` arguments and their labels),
// the names of the degradations a policy may accept, the digest client
// entries pin and the flag that pins a program; and what each backend's
// artefacts run in (Runtime), which run, prove and doctor dispatch on.
// Both sides import it and neither imports the other: a change to a
// format is one change here.
package artefact

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"strings"
)

// Digest is the form client entries carry: "sha256:" and the hex digest.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// expandBase replaces a leading ${PROJECT_ROOT} or ${HOME}; an empty
// value would turn "${HOME}/x" into "/x", so it is an error, and so is a
// placeholder this contract does not define.
func expandBase(p, root, home string) (string, error) {
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

// ToolsPath is where build writes a server's tool surface (a
// toolpolicy.Policy as JSON), relative to the .mcpolicy folder; the
// backend artefacts carry its digest (BwrapSpec.Tools, Ruleset.Tools,
// LabelTools).
func ToolsPath(server string) string { return "tools/" + server + ".json" }
