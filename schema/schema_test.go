package schema

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// TestProtectedNamesMatchSchema keeps package protect's list and the
// schema's #ProtectedName equal, with the sentence an error prints: the
// compiler protects the one, users may unprotect only the other.
func TestProtectedNamesMatchSchema(t *testing.T) {
	def := cuecontext.New().CompileBytes(schemaSource)
	var quoted []string
	for _, p := range protect.Patterns() {
		quoted = append(quoted, regexp.QuoteMeta(p))
	}
	op, args := def.LookupPath(cue.ParsePath("#ProtectedName")).Expr()
	var rx string
	if op == cue.RegexMatchOp && len(args) == 1 {
		rx, _ = args[0].String()
	}
	if want := "^(" + strings.Join(quoted, "|") + ")$"; rx != want {
		t.Errorf("schema #ProtectedName = =~%q\nprotect.Patterns() = =~%q", rx, want)
	}
	want := "one of the protected names: " + quoteList(protect.Patterns())
	for _, p := range []string{"#ProtectedName", "#Server.unprotect"} {
		if got := expect(def, p); got != want {
			t.Errorf("%s @expect = %q\nwant %q", p, got, want)
		}
	}
}

// TestDegradationsMatchExpect: the accept field's sentence names every
// degradation the schema has.
func TestDegradationsMatchExpect(t *testing.T) {
	def := cuecontext.New().CompileBytes(schemaSource)
	want := "one of " + quoteList(disjuncts(t, def.LookupPath(cue.ParsePath("#Degradation"))))
	if got := expect(def, "#Server.accept"); got != want {
		t.Errorf("#Server.accept @expect = %q\nwant %q", got, want)
	}
}

func expect(def cue.Value, path string) string {
	a := def.LookupPath(cue.ParsePath(path)).Attribute("expect")
	s, _ := a.String(0)
	return s
}

func disjuncts(t *testing.T, v cue.Value) []string {
	t.Helper()
	op, args := v.Expr()
	if op != cue.OrOp {
		t.Fatalf("%v is %v, want a disjunction", v, op)
	}
	var names []string
	for _, a := range args {
		s, err := a.String()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, s)
	}
	return names
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

func load(t *testing.T, name, src string) (*Policy, error) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(name, dir)
}

func TestDefaultsOnlySubtract(t *testing.T) {
	p, err := load(t, "mcpolicy.cue", `version: "v1"
servers: s: image: "x:1"
`)
	if err != nil {
		t.Fatal(err)
	}
	s := p.Servers[0]
	if s.User != "1000:1000" || len(s.Mounts) != 0 || s.Scratch != nil || len(s.Env) != 0 ||
		len(s.Network.Allow) != 0 || len(s.Unprotect) != 0 {
		t.Errorf("a server that says nothing must get nothing, got %+v", s)
	}
}

func TestFormatsAgree(t *testing.T) {
	want, err := load(t, "mcpolicy.cue", `version: "v1"
servers: a: {image: "x:1", mounts: [{source: ".", target: "/w", mode: "rw"}], env: ["TOKEN"]}
`)
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"mcpolicy.json":    `{"version": "v1", "servers": {"a": {"image": "x:1", "mounts": [{"source": ".", "target": "/w", "mode": "rw"}], "env": ["TOKEN"]}}}`,
		"mcpolicy.yaml":    "version: v1\nservers:\n  a:\n    image: x:1\n    mounts:\n      - {source: ., target: /w, mode: rw}\n    env: [TOKEN]\n",
		"mcpolicy.jsonnet": `local m(s, t) = {source: s, target: t, mode: "rw"}; {version: "v1", servers: {a: {image: "x:1", mounts: [m(".", "/w")], env: ["TOKEN"]}}}`,
	} {
		got, err := load(t, name, src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		g, w := got.Servers[0], want.Servers[0]
		if g.Image != w.Image || g.Mounts[0].Source != w.Mounts[0].Source || g.Mounts[0].Mode != "rw" || g.Env[0].Name != "TOKEN" {
			t.Errorf("%s decodes to %+v, want %+v", name, g, w)
		}
		if g.Mounts[0].Pos.Line == 0 {
			t.Errorf("%s: mount has no position", name)
		}
	}
}

// TestErrorsNameFileLineFieldAndExpectation checks the parts of a message a
// user needs: where, which field, what was expected, what was given.
func TestErrorsNameFileLineFieldAndExpectation(t *testing.T) {
	cases := []struct {
		src  string
		want []string
	}{
		{`version: "v1"
servers: "code-index": {
	mounts: [{source: ".", target: "/w", mode: "rwx"}]
}`, []string{`mcpolicy.cue:3:45: servers."code-index".mounts[0].mode: must be "ro" or "rw" (got "rwx")`}},
		{`version: "v1"
servers: a: mountz: []`, []string{`mcpolicy.cue:2:13: servers.a.mountz: unknown field "mountz"`, `did you mean "mounts"?`}},
		{`version: "v1"
servers: a: scratch: target: "/tmp"`, []string{`servers.a.scratch.size: required field is missing`, "must be bounded"}},
		{`servers: a: image: "x"`, []string{`version: required field is missing`}},
		{`version: "v1"
servers: a: env: ["A=b"]`, []string{`mcpolicy.cue:2:19: servers.a.env[0]: must be an environment variable NAME only`, `(got "A=b")`}},
	}
	for _, c := range cases {
		_, err := load(t, "mcpolicy.cue", c.src)
		var es Errors
		if !errors.As(err, &es) {
			t.Errorf("%s\ngot %v, want schema.Errors", c.src, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s\nerror:\n%v\nwant it to contain %q", c.src, err, w)
			}
		}
	}
}

func TestJsonnetImportsStayInsideRoot(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "proj")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "outside.libsonnet"), []byte(`{}`), 0o644)
	for _, imp := range []string{"../outside.libsonnet", filepath.Join(dir, "outside.libsonnet")} {
		f := filepath.Join(root, "mcpolicy.jsonnet")
		os.WriteFile(f, []byte(`import '`+imp+`'`), 0o644)
		_, err := Load(f, root)
		if err == nil || !strings.Contains(err.Error(), "Jsonnet error") || !strings.Contains(err.Error(), "import") {
			t.Errorf("import %q: got %v, want a refused import", imp, err)
		}
	}
}
