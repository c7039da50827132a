package artefact

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// TestExpandFixedTop: the fixed top level and the protected paths are host
// paths the launcher binds, so their placeholders are expanded like the
// grants'; a ruleset without them keeps them out of its JSON.
func TestExpandFixedTop(t *testing.T) {
	rs := &Ruleset{ReadWrite: []string{"${PROJECT_ROOT}", "${HOME}/out"}, FixedTop: "${PROJECT_ROOT}",
		Protected: []string{"${HOME}/out/.git"}, Unprotected: []string{".env*"}, Command: []string{"/bin/true"}}
	if err := rs.Expand("/p", "/h"); err != nil {
		t.Fatal(err)
	}
	if rs.FixedTop != "/p" || strings.Join(rs.Protected, ",") != "/h/out/.git" || strings.Join(rs.Unprotected, ",") != ".env*" {
		t.Errorf("fixedTop %q, protected %q, unprotected %q", rs.FixedTop, rs.Protected, rs.Unprotected)
	}
	plain := string((&Ruleset{Command: []string{"/bin/true"}}).JSON())
	for _, f := range []string{"fixedTop", "protected", "unprotected"} {
		if strings.Contains(plain, `"`+f+`"`) {
			t.Errorf("a ruleset without %s shows it:\n%s", f, plain)
		}
	}
}

// TestLocalTools: a Landlock server sees host paths, so the relay holds a
// path argument to the host path each under names, once expanded; the
// workdir is the ruleset's; a path the ruleset does not map stays.
func TestLocalTools(t *testing.T) {
	rs := &Ruleset{Workdir: "${PROJECT_ROOT}", ToolPaths: []PathMap{{Sandbox: "/workspace/data", Host: "${PROJECT_ROOT}/data"}}}
	if err := rs.Expand("/p", "/h"); err != nil {
		t.Fatal(err)
	}
	p := &toolpolicy.Policy{Allow: []toolpolicy.Rule{{Pattern: "*"}}, Args: []toolpolicy.ArgRule{
		{Tool: "read_file", Arg: "path", Under: []string{"/workspace/data", "/tmp"}, Workdir: "/workspace"},
		{Tool: "search", Arg: "q", Pattern: "^a$"},
	}}
	got := rs.LocalTools(p)
	if u := got.Args[0].Under; strings.Join(u, ",") != "/p/data,/tmp" || got.Args[0].Workdir != "/p" {
		t.Errorf("under %q workdir %q, want /p/data,/tmp and /p", u, got.Args[0].Workdir)
	}
	if p.Args[0].Under[0] != "/workspace/data" {
		t.Error("LocalTools changed the policy it was given")
	}
	if got.Args[1].Pattern != "^a$" {
		t.Errorf("a rule without under changed: %+v", got.Args[1])
	}
	call := func(path string) *toolpolicy.Refusal {
		return got.CheckCall("read_file", []byte(`{"path": "`+path+`"}`))
	}
	if call("/p/data/x.txt") != nil || call("/workspace/data/x.txt") == nil {
		t.Error("the mapped rule does not hold a host path, or still takes the sandbox one")
	}
}
