package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// fullTree is mcpolicy's command tree with what cobra adds when it runs:
// the help and completion commands, -h/--help on every command, --version.
func fullTree(t *testing.T) *cobra.Command {
	t.Helper()
	root := newRootCmd()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	walkCommands(root, func(c *cobra.Command) { c.InitDefaultHelpFlag() })
	return root
}

// TestGrammar holds every flag of every command to the grammar table: the
// name is in it, with its shorthand (or none), its type (a repeatable
// flag is the table's type, taken several times), hidden exactly when it
// is a deprecated alias (which names what it stands for) or an internal
// one; --format takes values from the one vocabulary, its default first.
// The table has no row no command uses, and a shorthand names one flag.
func TestGrammar(t *testing.T) {
	root := fullTree(t)
	used := map[string]bool{}
	n := 0
	walkCommands(root, func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			n++
			at := c.CommandPath() + " --" + f.Name
			used[f.Name] = true
			g, ok := grammarEntry(f.Name)
			if !ok {
				t.Errorf("%s: not in the grammar (grammar.go): add its row, or use a name that is", at)
				return
			}
			if f.Shorthand != g.Short {
				t.Errorf("%s: shorthand %q, the grammar's is %q", at, f.Shorthand, g.Short)
			}
			typ := f.Value.Type()
			if typ != g.Type && !(g.Repeatable && g.Type == "string" && typ == "stringArray") {
				t.Errorf("%s: type %s, the grammar's is %s (repeatable: %v)", at, typ, g.Type, g.Repeatable)
			}
			alias := f.Annotations[annDeprecated]
			switch {
			case g.Alias != "" && (!f.Hidden || !slices.Equal(alias, []string{g.Alias})):
				t.Errorf("%s: a deprecated alias of %s, so hidden (%v) with aliasFlag (%q)", at, g.Alias, f.Hidden, alias)
			case g.Alias == "" && len(alias) > 0:
				t.Errorf("%s: marked an alias of %q, the grammar says it is no alias", at, alias)
			case f.Hidden && g.Alias == "" && !g.Internal:
				t.Errorf("%s: hidden, but neither a deprecated alias nor internal in the grammar", at)
			}
			if f.Name != "format" {
				if len(f.Annotations[annFormats]) > 0 {
					t.Errorf("%s: formats annotated on a flag that is not --format", at)
				}
				return
			}
			formats := f.Annotations[annFormats]
			if len(formats) == 0 {
				t.Errorf("%s: define it with formatFlag, which lists the formats it takes", at)
			}
			for _, v := range formats {
				if !slices.ContainsFunc(formatWords, func(w struct{ Name, Means string }) bool { return w.Name == v }) {
					t.Errorf("%s: format %q is not in the vocabulary (formatWords)", at, v)
				}
			}
			if len(formats) > 0 && f.DefValue != formats[0] {
				t.Errorf("%s: default %q, want the first of %q", at, f.DefValue, formats)
			}
		})
	})
	if n < 50 {
		t.Fatalf("only %d flags seen: is the tree walked?", n)
	}
	shorts := map[string]string{}
	for _, g := range grammar {
		if !used[g.Name] {
			t.Errorf("--%s: in the grammar, on no command: remove its row", g.Name)
		}
		if g.Short == "" {
			continue
		}
		if other, ok := shorts[g.Short]; ok {
			t.Errorf("-%s: the shorthand of --%s and --%s", g.Short, other, g.Name)
		}
		shorts[g.Short] = g.Name
		if g.Alias != "" || g.Internal {
			t.Errorf("--%s: a hidden flag with a shorthand", g.Name)
		}
	}
}

// jsonRuns are, for each command that prints --format json, the
// invocations TestGrammarJSON runs on its fixture ({dir}: the project,
// {old}: an older version of it). Engines' commands run only without
// -short.
var jsonRuns = map[string][][]string{
	"mcpolicy vet":     {{"vet", "{dir}", "-f", "json"}, {"vet", "{bad}", "-f", "json"}},
	"mcpolicy lint":    {{"lint", "{dir}", "-f", "json"}},
	"mcpolicy check":   {{"check", "-p", "{dir}", "-f", "json"}},
	"mcpolicy diff":    {{"diff", "{old}", "{dir}", "-f", "json"}},
	"mcpolicy rules":   {{"rules", "-f", "json"}, {"rules", "--diff", "-f", "json"}},
	"mcpolicy why":     {{"why", "/workspace/a", "-p", "{dir}", "-f", "json"}, {"why", "api.github.com:443", "-p", "{dir}", "-f", "json"}},
	"mcpolicy explain": {{"explain", "-p", "{dir}", "-f", "json"}, {"explain", "-p", "{dir}", "-b", "bwrap", "-f", "json"}},
	"mcpolicy args":    {{"args", "code-index", "-p", "{dir}", "-f", "json"}},
	"mcpolicy build":   {{"build", "{dir}", "-f", "json", "--check"}, {"build", "{dir}", "-f", "json"}, {"build", "{dir}", "-f", "json", "--check"}},
	"mcpolicy doctor":  {{"doctor", "-f", "json", "--timeout", "10s"}},
}

// engines are the commands of jsonRuns that start engines or sandboxes.
var engines = map[string]bool{"mcpolicy doctor": true}

const grammarPolicy = `version: "v1"
servers: "code-index": {
	image: "code-index:1.7.2"
	mounts: [{source: ".", target: "/workspace", mode: "rw"}]
	scratch: size: "256m"
	network: allow: ["api.github.com:443"]
	env: ["GITHUB_TOKEN"]
}
`

// keyRe is a JSON key of mcpolicy's: lowercase.
var keyRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// TestGrammarJSON runs the json output of every command that has one on
// a fixture: each prints one JSON document whose keys are lowercase at
// every depth and whose "pos" is always {"file", "line", "col"}; the
// same invocation with a format the command does not print is refused
// before it runs, naming the formats it does.
func TestGrammarJSON(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".state"))
	base := t.TempDir()
	dir, old, bad := filepath.Join(base, "new"), filepath.Join(base, "old"), filepath.Join(base, "bad")
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), grammarPolicy)
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	writeFile(t, filepath.Join(old, "mcpolicy.cue"), policy)
	writeFile(t, filepath.Join(bad, "mcpolicy.cue"), strings.Replace(policy, `"rw"`, `"rwx"`, 1))
	expand := strings.NewReplacer("{dir}", dir, "{old}", old, "{bad}", bad)

	walkCommands(fullTree(t), func(c *cobra.Command) {
		f := c.Flags().Lookup("format")
		if f == nil || !slices.Contains(f.Annotations[annFormats], "json") {
			if _, ok := jsonRuns[c.CommandPath()]; ok {
				t.Errorf("%s: in jsonRuns, but prints no json", c.CommandPath())
			}
			return
		}
		runs := jsonRuns[c.CommandPath()]
		if len(runs) == 0 {
			t.Errorf("%s prints json: add it to jsonRuns", c.CommandPath())
			return
		}
		for _, args := range runs {
			for i := range args {
				args[i] = expand.Replace(args[i])
			}
			if engines[c.CommandPath()] && testing.Short() {
				t.Logf("%s: starts engines, not run with -short", strings.Join(args, " "))
			} else {
				code, out, stderr := run(t, args...)
				var v any
				if err := json.Unmarshal([]byte(out), &v); err != nil || out == "" {
					t.Errorf("mcpolicy %s: exit %d, not one JSON document (%v):\n%s\nstderr: %s", strings.Join(args, " "), code, err, out, stderr)
					continue
				}
				checkJSON(t, "mcpolicy "+strings.Join(args, " "), "", v, map[string]bool{})
			}
			bogus := slices.Clone(args)
			bogus[slices.Index(bogus, "json")] = "bogus"
			code, out, stderr := run(t, bogus...)
			if code != ExitError || out != "" || !strings.Contains(stderr, `--format "bogus": `+c.CommandPath()+" prints ") {
				t.Errorf("mcpolicy %s: exit %d, stdout %q, stderr %q: want exit 1 naming the formats, nothing done", strings.Join(bogus, " "), code, out, stderr)
			}
		}
	})
}

// checkJSON holds every key of v, at every depth, to keyRe, and every
// "pos" to {"file", "line", "col"}, saying each path once (seen).
func checkJSON(t *testing.T, run, at string, v any, seen map[string]bool) {
	t.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if seen[at+k] {
				continue
			}
			if !keyRe.MatchString(k) {
				seen[at+k] = true
				t.Errorf("%s: key %s%s is not lowercase", run, at, k)
			}
			if k == "pos" {
				p, ok := e.(map[string]any)
				_, file := p["file"]
				_, line := p["line"]
				_, col := p["col"]
				if !ok || len(p) != 3 || !file || !line || !col {
					seen[at+k] = true
					t.Errorf("%s: %spos is %v, not {file, line, col}", run, at, e)
				}
			}
			checkJSON(t, run, at+k+".", e, seen)
		}
	case []any:
		for _, e := range v {
			checkJSON(t, run, at+"[]", e, seen)
		}
	}
}

// TestDeprecatedAliases: an alias works as what it stands for, with a
// one-line notice on stderr and the same stdout; given with it, a
// contradicting value is refused.
func TestDeprecatedAliases(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "mcpolicy.cue"), policy)
	for _, cmd := range [][]string{{"args", "code-index"}, {"explain"}} {
		code, via, said := run(t, append(cmd, "-p", dir)...)
		if code != ExitOK {
			t.Fatalf("%s -p: exit %d: %s", cmd, code, said)
		}
		code, out, stderr := run(t, append(cmd, "--path", dir)...)
		if code != ExitOK || out != via || stderr != "mcpolicy: note: --path is deprecated: use -p/--policy\n"+said {
			t.Errorf("%s --path: exit %d, stderr %q, stdout as -p's: %v", cmd, code, stderr, out == via)
		}
	}
	code, out, stderr := run(t, "doctor", "--json", "--format", "text")
	if code != ExitError || out != "" || !strings.Contains(stderr, "--json and --format text: give one") {
		t.Errorf("doctor --json --format text: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if testing.Short() {
		t.Log("doctor --json starts engines: not run with -short")
		return
	}
	code, out, stderr = run(t, "doctor", "--json", "--timeout", "10s")
	var rep struct{ Usable []string }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !strings.HasPrefix(stderr, "mcpolicy: note: --json is deprecated: use --format json\n") {
		t.Errorf("doctor --json: exit %d, %v, stderr %q", code, err, stderr)
	}
}

// TestGrammarDoc: docs/commands.md's tables are the grammar's, with the
// commands of today's tree; MCPOLICY_UPDATE=1 (make docs) rewrites them.
func TestGrammarDoc(t *testing.T) {
	const file = "../../../docs/commands.md"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spliceGrammar(string(b), fullTree(t))
	if err != nil {
		t.Fatal(err)
	}
	if want == string(b) {
		return
	}
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		if err := os.WriteFile(file, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/commands.md is stale: run `make docs`")
}
