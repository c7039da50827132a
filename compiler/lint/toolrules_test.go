package lint_test

import (
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// TestGrantCountLeavesToolsOut: naming four tools and a constraint is
// narrower than "*"; GRANT_COUNT counts the grants that confine, not those.
func TestGrantCountLeavesToolsOut(t *testing.T) {
	e := lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\tmounts: [{source: \".\", target: \"/w\"}]\n" +
		"\ttools: {\n\t\tallow: [\"a\", \"b\", \"c\", \"d\"]\n\t\targs: a: q: maxBytes: 64\n\t}\n}\n"}
	if fs := lint.Run(targets(t, e), lint.Options{Only: []string{"GRANT_COUNT"}, MaxGrants: 4}).Findings; len(fs) != 0 {
		t.Errorf("GRANT_COUNT counted the tool surface: %v", fs)
	}
	e.Text = "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\tenv: [\"A\", \"B\", \"C\", \"D\"]\n\tmounts: [{source: \".\", target: \"/w\"}]\n}\n"
	if fs := lint.Run(targets(t, e), lint.Options{Only: []string{"GRANT_COUNT"}, MaxGrants: 4}).Findings; len(fs) != 1 {
		t.Errorf("five grants that confine: %v", fs)
	}
}
