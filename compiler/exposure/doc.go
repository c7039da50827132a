package exposure

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/credstore"
)

// refinementDoc says, per kind, what selects each refinement, for the
// generated reference (the weights' reasons say why they weigh what they do).
var refinementDoc = map[compiler.GrantKind]map[string]string{
	compiler.GrantMountRO: mountDoc,
	compiler.GrantMountRW: mountDoc,
	compiler.GrantScratch: {"bounded": "the one scratch tmpfs, its size bounded"},
	compiler.GrantEnv: {
		envSecret: "the name looks secret (below)",
		envPlain:  "any other name",
	},
	compiler.GrantSetEnv: {"constant": "a value written in the policy (`setenv`)"},
	compiler.GrantPack: {
		"go": "`packs: [\"go\"]`", "npx": "`packs: [\"npx\"]`", "uvx": "`packs: [\"uvx\"]`",
		"pipx": "`packs: [\"pipx\"]`", "deno": "`packs: [\"deno\"]`",
	},
	compiler.GrantEgress: {
		egressHost:     "an exact name: `api.github.com:443`",
		egressAddress:  "a public address: `140.82.112.3:443`",
		egressPrivate:  "a loopback, private, link-local or CGNAT address: `10.0.0.5:5432`, `169.254.169.254:80`",
		egressWildcard: "every name below a domain: `*.example.com:443`",
	},
	compiler.GrantUnprotect: {unprotectOther: "any other protected name"},
	compiler.GrantRootUser:  {"uid0": "`user: \"0:0\"`"},
	compiler.GrantTool: {
		toolName: "a tool's name in `tools.allow`: `read_graph`",
		toolGlob: "a glob in `tools.allow`: `search_*`",
		toolAll:  "`tools.allow: [\"*\"]`",
	},
	compiler.GrantToolArg:    {"constraint": "one argument's constraints in `tools.args`"},
	compiler.GrantCredential: {"bound": "one entry of `credentials`, whatever its destinations"},
	compiler.GrantInvoker:    {"invoker": "`user: \"invoker\"`, or any server with the seatbelt backend (sandbox-exec cannot switch ids)"},
}

var mountDoc = map[string]string{
	classRoot:        "`/`",
	classHomes:       "a folder holding home folders: `/home`, `/Users`, `/var` (it holds `/var/root`), `~/..`",
	classHome:        "a home folder: `~`, `/home/NAME`, `/Users/NAME`, `/root`, `/var/root`",
	classCredentials: "a credential store of a home, a path in one, or a folder holding one (`~/.config` holds `~/.config/gcloud`)",
	classSecretFile:  "a path whose last name looks secret (below), outside a credential store",
	classInHome:      "any other path below a home folder",
	classElsewhere:   "any other absolute path",
	classProject:     "the project root (`.` beside the policy)",
	classInProject:   "any other path of the project",
}

// Markdown is the generated part of docs/exposure.md: the weights, one
// table per grant kind in the data's order, then the lexical rules that
// pick a refinement.
func (t *Table) Markdown() string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var kind compiler.GrantKind
	for _, w := range t.Weights {
		if w.Kind != kind {
			kind = w.Kind
			fmt.Fprintf(&b, "\n### %s\n\n| refinement | applies to | weight | why |\n|---|---|---:|---|\n", kind)
		}
		applies := refinementDoc[kind][w.Refinement]
		switch {
		case kind == compiler.GrantUnprotect && applies == "":
			applies = "`unprotect: [\"" + w.Refinement + "\"]`"
		case kind == compiler.GrantDegrade:
			applies = "`accept: [\"" + w.Refinement + "\"]`"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", w.Refinement, cell(applies), w.Weight, cell(w.Reason))
	}
	fmt.Fprintf(&b, "\n### anything else\n\nA grant kind, or a degradation, that these weights do not name weighs %d: %s.\n", t.Unknown.Weight, t.Unknown.Reason)

	m := t.Match
	b.WriteString("\n### How a refinement is chosen\n\n")
	b.WriteString("Mount sources are read from the plan's host path (`${PROJECT_ROOT}/…`, `${HOME}/…` or absolute), never from the disk; the first class that applies wins, in the order of the table above.\n\n")
	fmt.Fprintf(&b, "- **Credential stores**, relative to a home folder (package `compiler/credstore`: the list lint's `MOUNT_CREDENTIALS` reads): %s.\n", codeList(credstore.Stores, "~/"))
	fmt.Fprintf(&b, "- **Secret file names** (the last name of a mount source): %s, but not %s.\n", codeList(m.SecretFiles, ""), codeList(m.NotSecretFiles, ""))
	fmt.Fprintf(&b, "- **Secret env names**, case-insensitive, the name split into words at `_`, `-` and `.`: the name contains %s, or a word is %s; "+
		"unless its last word is %s, or its first word is %s.\n",
		codeList(m.SecretEnv.Contains, ""), codeList(m.SecretEnv.Words, ""), codeList(m.SecretEnv.Attributes, ""), codeList(m.SecretEnv.Counters, ""))
	return b.String()
}

func codeList(items []string, prefix string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = "`" + prefix + s + "`"
	}
	return strings.Join(q, ", ")
}

// Markers delimit the generated weights in docs/exposure.md.
const (
	DocBegin = "<!-- exposure weights: generated from compiler/exposure/weights.cue (`go run ./compiler/exposure/_gen docs/exposure.md`); do not edit -->"
	DocEnd   = "<!-- end exposure weights -->"
)

// Splice replaces the text between the markers in doc with the embedded
// table's Markdown.
func Splice(doc string) (string, error) {
	i, j := strings.Index(doc, DocBegin), strings.Index(doc, DocEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("no %q ... %q markers", DocBegin, DocEnd)
	}
	return doc[:i] + DocBegin + "\n" + Weights().Markdown() + "\n" + doc[j:], nil
}
