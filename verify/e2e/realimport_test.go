package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// importPolicies runs `mcpolicy import` on Claude Code's file (the user's
// ~/.claude.json) and returns, per server, the policy it wrote with the
// hand edits this test makes to it, and the edits' reasons. ok is false
// when this mcpolicy has no import command.
func (w *realWorld) importPolicies(t *testing.T) (policies map[string]string, edits map[string][]string, ok bool) {
	if _, err := w.run(t, "import", "--help"); err != nil {
		return nil, nil, false
	}
	out := filepath.Join(w.base, "imported")
	msg, err := w.run(t, "import", "--client", filepath.Join(w.home, ".claude.json"), "--out", out)
	t.Logf("mcpolicy import:\n%s", msg)
	if err != nil {
		t.Logf("import's policies do not build as written: %v", err)
	}
	policies, edits = map[string]string{}, map[string][]string{}
	for _, e := range w.entries() {
		b, err := os.ReadFile(filepath.Join(out, "mcpolicy.d", e.name+".cue"))
		if err != nil {
			t.Fatalf("import wrote no policy for %s: %v", e.name, err)
		}
		policies[e.name], edits[e.name] = w.handEdit(e.name, string(b))
	}
	return policies, edits, true
}

// engineEdit starts the reason of an edit only docker and podman need.
const engineEdit = "docker and podman"

var serverLine = regexp.MustCompile(`(?m)^servers: "?[a-z-]+"?: \{\n`)

// handEdit makes the edits a user makes to import's policy for name
// before it works on every backend of this test, and says why.
func (w *realWorld) handEdit(name, policy string) (string, []string) {
	var add, why []string
	if name == "gopls" && !strings.Contains(policy, "workdir:") {
		// A user-scope entry names no folder: gopls serves the folder
		// its client runs in, which import cannot know.
		add = append(add, fmt.Sprintf("workdir: %q", w.proj), fmt.Sprintf("mounts: [{source: %[1]q, target: %[1]q}]", w.proj))
		if !strings.Contains(policy, "scratch:") {
			add = append(add, `scratch: {target: "/tmp", size: "256m"}`)
		}
		why = append(why, "gopls: the project it serves (workdir and a read-only mount) and a writable cache")
	}
	if !strings.Contains(policy, "image:") {
		add = append(add, fmt.Sprintf("image: %q", w.image))
		if !strings.Contains(policy, "backends:") {
			add = append(add, `backends: ["bwrap", "landlock", "docker"]`)
		}
		if name == "notes-node" || name == "notes-python" {
			// An empty image: node or python and their libraries come
			// from the host, as the host backends' runtime baseline
			// binds them.
			add = append(add, `mounts: [{source: "/usr", target: "/usr"}]`)
		}
		why = append(why, engineEdit+": an image (here one of links only, the server coming through mounts) and the backends")
	}
	if len(add) == 0 {
		return policy, nil
	}
	loc := serverLine.FindStringIndex(policy)
	if loc == nil {
		return policy + "\n// no servers line: not edited\n", why
	}
	// CUE unifies a second declaration of a list field only when equal:
	// added mounts go into the existing list instead.
	var fields []string
	for _, a := range add {
		if m, ok := strings.CutPrefix(a, "mounts: ["); ok && strings.Contains(policy, "\tmounts: [\n") {
			policy = strings.Replace(policy, "\tmounts: [\n", "\tmounts: [\n\t\t"+strings.TrimSuffix(m, "]")+",\n", 1)
			continue
		}
		fields = append(fields, "\t"+a+"\n")
	}
	policy = policy[:loc[1]] + "\t// Edited by hand after import: " + strings.Join(why, "; ") + ".\n" + strings.Join(fields, "") + policy[loc[1]:]
	return policy, why
}
