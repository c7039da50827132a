package layering

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const mod = "github.com/mcpolicy/mcpolicy/"

// layers, lowest first: a package may import its own layer and those
// below. The folder says the layer (docs/architecture.md, "The layers").
var layers = []struct {
	name    string
	folders []string
}{
	{"leaves", []string{"internal"}},
	{"schema", []string{"schema"}},
	{"compiler", []string{"compiler"}},
	{"emitters", []string{"emit"}},
	{"runtime", []string{"runtime"}},
	{"evidence", []string{"evidence"}},
	{"project and clients", []string{"project", "clientcfg"}},
	{"commands", []string{"cmd"}},
}

// known are the edges docs/architecture.md's rules forbid that the tree
// still has, each with its reason. The list only shrinks: an edge gone
// from the tree must go from here too. (Emitters once reached
// runtime/launch for the artefact formats: those are internal/artefact's
// now, and host capabilities internal/hostcaps's.)
var known = map[string]string{}

// within: imports across layers an emitter may not make even downwards:
// lint's types and the schema are not an emitter's vocabulary. (The
// reverse parsers once filled lint's targets: those are compiler/readback's
// now; seatbelt read the schema's baselines: internal/baseline holds them.)
var within = map[string]string{}

func layerOf(pkg string) (int, bool) {
	rel, ok := strings.CutPrefix(pkg, mod)
	if !ok {
		return 0, false
	}
	best, at := -1, -1
	for i, l := range layers {
		for _, f := range l.folders {
			if (rel == f || strings.HasPrefix(rel, f+"/")) && len(f) > best {
				best, at = len(f), i
			}
		}
	}
	return at, at >= 0
}

// TestLayering: no package imports from a layer above its own; an
// emitter imports neither lint nor the schema; the exceptions are the
// listed ones, and each of those is still there.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from, ok := layerOf(f[0])
		if !ok {
			continue // bench, golden, verify, docs, examples: tests and data
		}
		for _, imp := range f[1:] {
			to, ok := layerOf(imp)
			if !ok {
				continue
			}
			edge := strings.TrimPrefix(f[0], mod) + " -> " + strings.TrimPrefix(imp, mod)
			up := to > from
			lintOrSchema := layers[from].name == "emitters" && (strings.HasPrefix(imp, mod+"compiler/lint") || strings.HasPrefix(imp, mod+"schema"))
			if !up && !lintOrSchema {
				continue
			}
			seen[edge] = true
			if _, ok := known[edge]; ok && up {
				continue
			}
			if _, ok := within[edge]; ok && lintOrSchema {
				continue
			}
			if up {
				t.Errorf("%s: %s imports from %s, a layer above it", edge, layers[from].name, layers[to].name)
			} else {
				t.Errorf("%s: an emitter reads plans, not lint's types or the schema", edge)
			}
		}
	}
	var gone []string
	for _, list := range []map[string]string{known, within} {
		for edge := range list {
			if !seen[edge] {
				gone = append(gone, edge)
			}
		}
	}
	sort.Strings(gone)
	for _, edge := range gone {
		t.Errorf("%s is no longer in the tree: remove it from the exceptions", edge)
	}
}

// TestLauncherReadsNoPolicy: mcpolicy-launch, which every client entry
// but an egress one runs at each spawn, starts a server from its pinned
// artefact: nothing it links reads a policy (no CUE, no Jsonnet, neither
// the schema nor the compiler).
func TestLauncherReadsNoPolicy(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", mod+"cmd/mcpolicy-launch").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"cuelang.org/", "github.com/google/go-jsonnet", mod + "schema", mod + "compiler"} {
			if pkg == strings.TrimSuffix(banned, "/") || strings.HasPrefix(pkg, banned) {
				t.Errorf("mcpolicy-launch links %s: a spawn would read or compile a policy", pkg)
			}
		}
	}
}
