package entry

import (
	"errors"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/pelletier/go-toml/v2"
)

// codexLaunch is the entry the shapes below merge.
var codexLaunch = &Launch{
	Command: "/usr/local/bin/mcpolicy-launch",
	Args:    []string{"--engine", "/usr/bin/docker", "--", "run", "img:1"},
	Env:     map[string]string{"PATH": "/usr/bin:/bin"},
	EnvVars: []string{"GITHUB_TOKEN"},
}

// The entry as a section and as a member of an inline table, written out
// by hand; KEY is the server's TOML key. Its launch alone is the lines of
// codexFields, or the members of codexLaunchMembers.
const (
	codexFields = "command = \"/usr/local/bin/mcpolicy-launch\"\n" +
		"args = [\"--engine\", \"/usr/bin/docker\", \"--\", \"run\", \"img:1\"]\n" +
		"env = { PATH = \"/usr/bin:/bin\" }\n" +
		"env_vars = [\"GITHUB_TOKEN\"]\n"
	codexBlock         = "[mcp_servers.KEY]\n" + codexFields
	codexLaunchMembers = `command = "/usr/local/bin/mcpolicy-launch", args = ["--engine", "/usr/bin/docker", "--", "run", "img:1"], env = { PATH = "/usr/bin:/bin" }, env_vars = ["GITHUB_TOKEN"]`
	codexMember        = `KEY = { ` + codexLaunchMembers + ` }`
)

// codexShape is a config before and after the entry is merged. In src, a
// line of the entry's launch (which must go) says "# part"; a line of the
// entry that is not its launch (its header, a key the user added, a
// comment) says "# entry": it stays when mcpolicy rewrites its own entry,
// and goes when --force replaces an entry that is not mcpolicy's; a line
// changed in place says "# edited"; every other line must stay, in order.
// In want, {{BLOCK}} and {{MEMBER}} stand for the entry, {{FIELDS}} and
// {{LAUNCH}} for its launch lines and inline members alone.
type codexShape struct {
	name, src, want string
	server, key     string // "alpha" and alpha unless set
	force           bool   // the entry in src is not mcpolicy's
	gone            []string
}

func (s *codexShape) defaults() {
	if s.server == "" {
		s.server = "alpha"
	}
	if s.key == "" {
		s.key = s.server
	}
}

var codexShapes = []codexShape{
	{name: "empty", src: "", want: "{{BLOCK}}"},
	{name: "blank lines only", src: "\n\n", want: "\n\n{{BLOCK}}"},
	{name: "append", src: "model = \"o3\"\n", want: "model = \"o3\"\n\n{{BLOCK}}"},
	{name: "append after a blank line", src: "model = \"o3\"\n\n", want: "model = \"o3\"\n\n{{BLOCK}}"},
	{name: "no trailing newline", src: "model = \"o3\"", want: "model = \"o3\"\n\n{{BLOCK}}"},
	{name: "replace at the end without a newline",
		src:  "model = \"o3\"\n\n[mcp_servers.alpha] # entry\ncommand = \"/usr/local/bin/mcpolicy-launch\" # part",
		want: "model = \"o3\"\n\n[mcp_servers.alpha] # entry\n{{FIELDS}}"},
	{name: "plain, between unrelated tables",
		src: `model = "o3"

[profiles.fast]
model = "o4-mini"

[mcp_servers.alpha] # entry
command = "/usr/local/bin/mcpolicy-launch" # part
args = ["old"] # part

[profiles.a]
k = 1
`,
		want: `model = "o3"

[profiles.fast]
model = "o4-mini"

[mcp_servers.alpha] # entry
{{FIELDS}}
[profiles.a]
k = 1
`},
	{name: "comments everywhere",
		src: `# top comment
model = "o3" # trailing

# about other
[mcp_servers.other] # other's header
command = "uvx" # keep
args = ["x"]

# about alpha, before its header
  [ mcp_servers . alpha ]   # entry
# inside alpha # entry
command = "/usr/local/bin/mcpolicy-launch" # part

  # indented inside # entry
args = [ # part
  "old", # a comment inside the array # part
] # part
# after alpha's last key: about profiles
[profiles.a]
k = 1 # keep
# end`,
		want: `# top comment
model = "o3" # trailing

# about other
[mcp_servers.other] # other's header
command = "uvx" # keep
args = ["x"]

# about alpha, before its header
  [ mcp_servers . alpha ]   # entry
# inside alpha # entry
{{FIELDS}}
  # indented inside # entry
# after alpha's last key: about profiles
[profiles.a]
k = 1 # keep
# end`},
	{name: "a multi-line string that looks like the header",
		src: `notes = """
[mcp_servers.alpha]
command = "not this"
"""
[mcp_servers.other]
command = "uvx"
`,
		want: `notes = """
[mcp_servers.alpha]
command = "not this"
"""
[mcp_servers.other]
command = "uvx"

{{BLOCK}}`},
	// (Foreign, and forced: a rewrite of mcpolicy's own entry keeps the
	// keys the user added, TestRewriteKeepsUserKeys.)
	{name: "a multi-line string inside the entry", force: true,
		src: `[mcp_servers.alpha] # part
command = "npx" # part
cwd = """ # part
[not.a.table] # part
""" # part
[mcp_servers.other]
command = "uvx"
`,
		want: "{{BLOCK}}[mcp_servers.other]\ncommand = \"uvx\"\n"},
	{name: "inline table without the entry",
		src:  "model = \"o3\"\nmcp_servers = { other = { command = \"uvx\", args = [\"x\"] } } # edited\n\n[profiles.a]\nk = 1\n",
		want: "model = \"o3\"\nmcp_servers = { other = { command = \"uvx\", args = [\"x\"] }, {{MEMBER}} } # edited\n\n[profiles.a]\nk = 1\n"},
	{name: "empty inline table",
		src: "mcp_servers = {} # edited\n", want: "mcp_servers = { {{MEMBER}} } # edited\n"},
	{name: "empty inline table with a blank",
		src: "mcp_servers = { } # edited\n", want: "mcp_servers = { {{MEMBER}} } # edited\n"},
	{name: "inline table, the entry in the middle",
		src:  "mcp_servers = { a = { command = \"x\" },  alpha = { command = \"/usr/local/bin/mcpolicy-launch\", args = [] } ,b = { command = \"y\" } } # edited\n",
		want: "mcp_servers = { a = { command = \"x\" },  {{MEMBER}} ,b = { command = \"y\" } } # edited\n"},
	{name: "inline table, the entry last",
		src:  "mcp_servers = {other = {command = \"x\"},alpha = {command = \"/usr/local/bin/mcpolicy-launch\"}} # edited\n",
		want: "mcp_servers = {other = {command = \"x\"},alpha = {{{LAUNCH}}}} # edited\n"},
	{name: "inline table, the entry as dotted keys",
		src:   "mcp_servers = { alpha.command = \"npx\", other = {command = \"x\"}, alpha.env.API_KEY = \"old-secret\" } # edited\n",
		want:  "mcp_servers = { {{MEMBER}}, other = {command = \"x\"} } # edited\n",
		force: true, gone: []string{"old-secret", "npx"}},
	{name: "dotted keys at the root",
		src: `model = "o3"
mcp_servers.alpha.command = "/usr/local/bin/mcpolicy-launch" # part
mcp_servers.other.command = "uvx"
mcp_servers.alpha.args = ["old"] # part

[profiles.a]
k = 1
`,
		want: `model = "o3"
mcp_servers.alpha.command = "/usr/local/bin/mcpolicy-launch"
mcp_servers.alpha.args = ["--engine", "/usr/bin/docker", "--", "run", "img:1"]
mcp_servers.alpha.env = { PATH = "/usr/bin:/bin" }
mcp_servers.alpha.env_vars = ["GITHUB_TOKEN"]
mcp_servers.other.command = "uvx"

[profiles.a]
k = 1
`},
	{name: "an inline table in [mcp_servers]",
		src:  "[mcp_servers]\nalpha = { command = \"/usr/local/bin/mcpolicy-launch\", args = [\"old\"] } # edited\nother = { command = \"uvx\" }\n",
		want: "[mcp_servers]\n{{MEMBER}} # edited\nother = { command = \"uvx\" }\n"},
	{name: "dotted keys in [mcp_servers]",
		src: `[mcp_servers]
alpha.command = "npx" # part
other.command = "uvx"
alpha.env.API_KEY = "old-secret" # part
`,
		want:  "[mcp_servers]\nother.command = \"uvx\"\n\n{{BLOCK}}",
		force: true, gone: []string{"old-secret", "npx"}},
	{name: "an env sub-table",
		src: `[mcp_servers.alpha] # part
command = "npx" # part
args = ["-y", "srv"] # part

[mcp_servers.alpha.env] # part
API_KEY = "old-secret" # part

[mcp_servers.other]
command = "uvx"
`,
		want:  "{{BLOCK}}\n\n[mcp_servers.other]\ncommand = \"uvx\"\n",
		force: true, gone: []string{"old-secret", "npx", "srv"}},
	{name: "a sub-table before the entry's header",
		src: `[mcp_servers.alpha.env] # part
API_KEY = "old-secret" # part

[mcp_servers.other]
command = "uvx"

[mcp_servers.alpha] # part
command = "npx" # part
`,
		want:  "{{BLOCK}}\n[mcp_servers.other]\ncommand = \"uvx\"\n\n",
		force: true, gone: []string{"old-secret", "npx"}},
	{name: "arrays of tables", force: true,
		src: `[mcp_servers.alpha] # part
command = "npx" # part

[[mcp_servers.alpha.x]] # part
k = 1 # part

[[mcp_servers.alpha.x]] # part
k = 2 # part
# before other
[mcp_servers.other]
command = "uvx"
`,
		want: "{{BLOCK}}\n\n# before other\n[mcp_servers.other]\ncommand = \"uvx\"\n"},
	{name: "a value in place of the entry",
		src: "[mcp_servers]\nalpha = \"npx\" # part\n", want: "[mcp_servers]\n\n{{BLOCK}}",
		force: true, gone: []string{"npx"}},
	{name: "values of every kind around the entry",
		src: `when = 1979-05-27T07:32:00-07:00
utc = 1979-05-27T07:32:00Z
day = 1979-05-27
at = 07:32:00
local = 1979-05-27T07:32:00
odd = [nan, +inf, -inf, 0x1F, 0o7, 0b1, 1e3, -0.0]
s = 'literal'
m = '''
multi'''
[[profiles.list]]
x = 1
[[profiles.list]]
x = { y = [1, [2, "3"]] }

[mcp_servers.alpha] # entry
command = "/usr/local/bin/mcpolicy-launch" # part
`,
		want: `when = 1979-05-27T07:32:00-07:00
utc = 1979-05-27T07:32:00Z
day = 1979-05-27
at = 07:32:00
local = 1979-05-27T07:32:00
odd = [nan, +inf, -inf, 0x1F, 0o7, 0b1, 1e3, -0.0]
s = 'literal'
m = '''
multi'''
[[profiles.list]]
x = 1
[[profiles.list]]
x = { y = [1, [2, "3"]] }

[mcp_servers.alpha] # entry
{{FIELDS}}`},
	{name: "a server name that needs quotes",
		src: `[mcp_servers.my.server]
command = "uvx"

[mcp_servers."my.server"] # entry
command = "/usr/local/bin/mcpolicy-launch" # part
`,
		server: "my.server", key: `"my.server"`,
		want: "[mcp_servers.my.server]\ncommand = \"uvx\"\n\n[mcp_servers.\"my.server\"] # entry\n{{FIELDS}}"},
	{name: "a literal-quoted server name",
		src:    "[mcp_servers.'my.server'] # entry\ncommand = \"/usr/local/bin/mcpolicy-launch\" # part\n\n[mcp_servers.my]\ncommand = \"uvx\"\n",
		server: "my.server", key: `"my.server"`,
		want: "[mcp_servers.'my.server'] # entry\n{{FIELDS}}\n[mcp_servers.my]\ncommand = \"uvx\"\n"},
	{name: "a new server name that needs quotes",
		src: "model = \"o3\"\n", server: "my.server", key: `"my.server"`,
		want: "model = \"o3\"\n\n{{BLOCK}}"},
	// Keys the user added to mcpolicy's entry keep their bytes: a value
	// decoded and encoded again would not (-nan, hex, a literal or
	// multi-line string, a sub-table, comments, their order).
	{name: "keys the user added to the entry",
		src: `[mcp_servers.alpha] # the indexer # entry
enabled = false # entry
command = "/usr/local/bin/mcpolicy-launch" # part
# slow on big repos # entry
tool_timeout_sec = 120 # entry
args = [ # part
  "old", # part
] # part
weight = -nan # entry
big = 0x7FFFFFFFFFFFFFFF # entry
path = 'C:\Users\ana' # entry
notes = """ # entry
two # entry
lines""" # entry
env.OLD = "old-secret" # part

[mcp_servers.alpha.tools.read] # entry
approve = true # entry

[mcp_servers.other]
command = "uvx"
`,
		want: `[mcp_servers.alpha] # the indexer # entry
enabled = false # entry
{{FIELDS}}# slow on big repos # entry
tool_timeout_sec = 120 # entry
weight = -nan # entry
big = 0x7FFFFFFFFFFFFFFF # entry
path = 'C:\Users\ana' # entry
notes = """ # entry
two # entry
lines""" # entry

[mcp_servers.alpha.tools.read] # entry
approve = true # entry

[mcp_servers.other]
command = "uvx"
`, gone: []string{"old-secret"}},
	{name: "an env sub-table of the entry",
		src: `[mcp_servers.alpha.env] # part
OLD = "old-secret" # part
# about alpha
[mcp_servers.alpha] # entry
args = ["old"] # part
startup_timeout_sec = 20 # entry
command = "/usr/local/bin/mcpolicy-launch" # part
[[mcp_servers.alpha.env.x]] # part
y = 1 # part
[[mcp_servers.alpha.hooks]] # entry
y = 2 # entry
`,
		want: `# about alpha
[mcp_servers.alpha] # entry
{{FIELDS}}startup_timeout_sec = 20 # entry
[[mcp_servers.alpha.hooks]] # entry
y = 2 # entry
`, gone: []string{"old-secret"}},
	{name: "keys the user added to an inline entry",
		src:  "mcp_servers = { alpha = { enabled = false, command = \"/usr/local/bin/mcpolicy-launch\", env = { OLD = \"old-secret\" }, tool_timeout_sec = 0x10, args = [] }, b = {} } # edited\n",
		want: "mcp_servers = { alpha = { enabled = false, {{LAUNCH}}, tool_timeout_sec = 0x10 }, b = {} } # edited\n",
		gone: []string{"old-secret"}},
	{name: "keys the user added, as dotted keys in the entry",
		src:  "mcp_servers = { alpha.enabled = false, alpha.command = \"/usr/local/bin/mcpolicy-launch\", b.command = \"x\", alpha.env.OLD = \"old-secret\" } # edited\n",
		want: "mcp_servers = { alpha.enabled = false, alpha.command = \"/usr/local/bin/mcpolicy-launch\", alpha.args = [\"--engine\", \"/usr/bin/docker\", \"--\", \"run\", \"img:1\"], alpha.env = { PATH = \"/usr/bin:/bin\" }, alpha.env_vars = [\"GITHUB_TOKEN\"], b.command = \"x\" } # edited\n",
		gone: []string{"old-secret"}},
	{name: "keys the user added, as dotted keys in [mcp_servers]",
		src: `[mcp_servers]
alpha.command = "/usr/local/bin/mcpolicy-launch" # part
alpha.enabled = false # entry
other.command = "uvx"
alpha.env.OLD = "old-secret" # part
alpha.tools.read = { approve = true } # entry
`,
		want: `[mcp_servers]
alpha.command = "/usr/local/bin/mcpolicy-launch"
alpha.args = ["--engine", "/usr/bin/docker", "--", "run", "img:1"]
alpha.env = { PATH = "/usr/bin:/bin" }
alpha.env_vars = ["GITHUB_TOKEN"]
alpha.enabled = false # entry
other.command = "uvx"
alpha.tools.read = { approve = true } # entry
`, gone: []string{"old-secret"}},
}

// TestCodexShapes merges the entry into each shape as it is, with CRLF
// lines and with a byte order mark, and checks the bytes, the parsed
// result, that a rewrite changes nothing, and (for a foreign entry) that
// only --force replaces it.
func TestCodexShapes(t *testing.T) {
	c, _ := clientcfg.LookupClient("codex")
	for _, s := range codexShapes {
		s.defaults()
		for _, variant := range []string{"lf", "crlf", "bom"} {
			src, want := s.src, s.want
			block, member, fields := strings.ReplaceAll(codexBlock, "KEY", s.key), strings.ReplaceAll(codexMember, "KEY", s.key), codexFields
			switch variant {
			case "crlf":
				if !strings.Contains(src, "\n") {
					continue // no line ending to keep
				}
				src, want = crlf(src), crlf(want)
				block, fields = crlf(block), crlf(fields)
			case "bom":
				src, want = "\ufeff"+src, "\ufeff"+want
			}
			want = strings.NewReplacer("{{BLOCK}}", block, "{{MEMBER}}", member, "{{FIELDS}}", fields, "{{LAUNCH}}", codexLaunchMembers).Replace(want)
			t.Run(s.name+"/"+variant, func(t *testing.T) {
				if s.force {
					var fe *ErrForeign
					out, err := Merge("config.toml", []byte(src), c, s.server, codexLaunch, false)
					if !errors.As(err, &fe) || out != nil {
						t.Fatalf("a foreign entry without --force: %v\n%s", err, out)
					}
				}
				out, err := Merge("config.toml", []byte(src), c, s.server, codexLaunch, s.force)
				if err != nil {
					t.Fatal(err)
				}
				if string(out) != want {
					t.Fatalf("got:\n%s\nwant:\n%s", out, want)
				}
				checkCodexMerge(t, src, string(out), s.server, !s.force)
				for _, g := range s.gone {
					if strings.Contains(string(out), g) {
						t.Errorf("%q is still in the file:\n%s", g, out)
					}
				}
				again, err := Merge("config.toml", out, c, s.server, codexLaunch, false)
				if err != nil || string(again) != string(out) {
					t.Errorf("writing the entry again changed the file (%v):\n%s", err, again)
				}
				if variant == "crlf" && strings.Count(string(out), "\n") != strings.Count(string(out), "\r\n") {
					t.Errorf("a CRLF file got LF lines:\n%q", out)
				}
			})
		}
	}
}

// TestCodexForeignShapes: an entry mcpolicy did not write is refused
// without --force in every shape it can take, and replaced with it.
func TestCodexForeignShapes(t *testing.T) {
	c, _ := clientcfg.LookupClient("codex")
	for _, s := range codexShapes {
		s.defaults()
		src := strings.ReplaceAll(s.src, "/usr/local/bin/mcpolicy-launch", "npx")
		if _, ok := codexServers(t, src)[s.server]; !ok {
			continue // no entry to refuse
		}
		t.Run(s.name, func(t *testing.T) {
			var fe *ErrForeign
			out, err := Merge("config.toml", []byte(src), c, s.server, codexLaunch, false)
			if !errors.As(err, &fe) || out != nil {
				t.Fatalf("a foreign entry without --force: %v\n%s", err, out)
			}
			out, err = Merge("config.toml", []byte(src), c, s.server, codexLaunch, true)
			if err != nil {
				t.Fatal(err)
			}
			checkCodexMerge(t, src, string(out), s.server, false)
			if strings.Contains(string(out), "npx") {
				t.Errorf("the foreign launch is still in the file:\n%s", out)
			}
		})
	}
}

// checkCodexMerge: the result parses, the entry reads back as written
// (with the keys the user added to it, when it was mcpolicy's: kept),
// every other key reads as before, and the lines of src outside the
// entry's launch (kept) or outside the entry stand in out in their order.
func checkCodexMerge(t *testing.T, src, out, server string, kept bool) {
	t.Helper()
	before, after := codexDoc(t, src), codexDoc(t, out)
	servers, _ := after["mcp_servers"].(map[string]any)
	want := map[string]any{
		"command": codexLaunch.Command,
		"args":    []any{"--engine", "/usr/bin/docker", "--", "run", "img:1"},
		"env":     map[string]any{"PATH": "/usr/bin:/bin"}, "env_vars": []any{"GITHUB_TOKEN"},
	}
	if was, _ := before["mcp_servers"].(map[string]any); kept {
		old, _ := was[server].(map[string]any)
		for k, v := range old {
			if want[k] == nil {
				want[k] = v
			}
		}
	}
	if !reflect.DeepEqual(nanFree(servers[server]), nanFree(want)) {
		t.Errorf("the entry reads back as %#v", servers[server])
	}
	for _, doc := range []map[string]any{before, after} {
		if s, ok := doc["mcp_servers"].(map[string]any); ok {
			delete(s, server)
			if len(s) == 0 {
				delete(doc, "mcp_servers")
			}
		}
	}
	if !reflect.DeepEqual(nanFree(before), nanFree(after)) {
		t.Errorf("the rest of the file reads differently:\nbefore %v\nafter  %v", before, after)
	}
	rest := strings.Split(strings.TrimPrefix(out, "\ufeff"), "\n")
	for _, line := range strings.Split(strings.TrimPrefix(src, "\ufeff"), "\n") {
		switch {
		case strings.Contains(line, "# part"), !kept && strings.Contains(line, "# entry"):
			if strings.Contains(out, line) {
				t.Errorf("a line of the old entry stayed: %q", line)
			}
			continue
		case strings.Contains(line, "# edited"), line == "", line == "\r":
			continue
		}
		for len(rest) > 0 && rest[0] != line {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			t.Errorf("the line %q is gone or out of order:\n%s", line, out)
			return
		}
		rest = rest[1:]
	}
}

// nanFree is v with each nan spelt as a string, which DeepEqual can
// compare.
func nanFree(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = nanFree(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = nanFree(e)
		}
		return out
	case float64:
		if math.IsNaN(x) {
			return "nan"
		}
	}
	return v
}

func codexDoc(t *testing.T, s string) map[string]any {
	t.Helper()
	doc := map[string]any{}
	if err := toml.Unmarshal([]byte(strings.TrimPrefix(s, "\ufeff")), &doc); err != nil {
		t.Fatalf("not TOML: %v\n%s", err, s)
	}
	return doc
}

func codexServers(t *testing.T, s string) map[string]any {
	servers, _ := codexDoc(t, s)["mcp_servers"].(map[string]any)
	return servers
}

func crlf(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }

// TestCodexRefusesUnparseable: a file Codex cannot read is never written
// to; the error names the line and column, and the key where it has one.
func TestCodexRefusesUnparseable(t *testing.T) {
	c, _ := clientcfg.LookupClient("codex")
	for _, tc := range []struct{ name, src, want string }{
		{"unclosed header", "model = 1\n[mcp_servers.alpha\ncommand = \"x\"\n", `^config.toml:2:19: not valid TOML, left untouched: expected character \]`},
		{"duplicate key", "a = 1\nb = 2\na = 3\n", `^config.toml:3:1: not valid TOML, left untouched: key a is already defined \(a\)`},
		{"duplicate table", "[mcp_servers.alpha]\ncommand = \"x\"\n\n[mcp_servers.alpha]\n", `^config.toml:4:2: .*table alpha already exists \(mcp_servers.alpha\)`},
		{"NUL byte", "model = \"o3\" # a\x00b\n", `^config.toml:1:17: .*invalid character in comment`},
		{"NUL in a string", "model = \"o\x003\"\n", `^config.toml:1:11: not valid TOML`},
		{"not UTF-8", "model = \"\xff\"\n", `^config.toml:1:10: not valid TOML`},
		{"a lone CR", "a = 1\rb = 2\n", `^config.toml:1:6: not valid TOML`},
		{"header after an inline mcp_servers", "mcp_servers = { other = { command = \"uvx\" } }\n\n[mcp_servers.alpha]\ncommand = \"x\"\n", `^config.toml:3:2: .*mcp_servers to be a table, not a value \(mcp_servers.alpha\)`},
		{"env table and sub-table", "[mcp_servers.alpha]\nenv = { A = \"1\" }\n\n[mcp_servers.alpha.env]\nB = \"2\"\n", `^config.toml:4:2: .*\(mcp_servers.alpha.env\)`},
		{"a dotted key over a value", "a = 1\n[t]\nb = 2\nb.c = 3\n", `^config.toml:4:1: .*\(t.b.c\)`},
		{"an inline table over lines", "mcp_servers = {\n a = {} }\n", `^config.toml:1:16: .*'\\n'`},
		{"error on the line of a BOM", "\ufeff[a\n", `^config.toml:1:3: `},
		{"mcp_servers a value", "mcp_servers = 5\n", `^config.toml:1:1: mcp_servers is not a table of servers, left untouched`},
		{"mcp_servers an array of tables", "x = 1\n[[mcp_servers]]\n", `^config.toml:2:3: mcp_servers is not a table of servers`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, force := range []bool{false, true} {
				out, err := Merge("config.toml", []byte(tc.src), c, "alpha", codexLaunch, force)
				if err == nil || out != nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) {
					t.Errorf("got %q, %v; want an error matching %s", out, err, tc.want)
				}
				if err != nil && strings.Contains(err.Error(), "not valid TOML") && !strings.Contains(err.Error(), "hint: ") {
					t.Errorf("no hint: %v", err)
				}
			}
		})
	}
}

// TestCodexValues: strings that need escapes, no args, no env, and many
// servers in one inline table read back as written; a value that is not
// UTF-8 cannot be written as TOML and is refused.
func TestCodexValues(t *testing.T) {
	c, _ := clientcfg.LookupClient("codex")
	odd := &Launch{Command: `C:\Program Files\"x"`, Args: []string{"a\nb", "tab\there", "\x01\x7f", "<&>", "émoji 🙂", ""}}
	for _, src := range []string{"", "mcp_servers = {}\n", "[mcp_servers]\n"} {
		out, err := Merge("config.toml", []byte(src), c, "odd", odd, false)
		if err != nil {
			t.Fatal(err)
		}
		entry, _ := codexServers(t, string(out))["odd"].(map[string]any)
		if entry["command"] != odd.Command || !reflect.DeepEqual(entry["args"], []any{"a\nb", "tab\there", "\x01\x7f", "<&>", "émoji 🙂", ""}) {
			t.Errorf("read back as %#v:\n%s", entry, out)
		}
		if _, ok := entry["env"]; ok {
			t.Errorf("an empty env was written:\n%s", out)
		}
		bare := &Launch{Command: "/usr/local/bin/mcpolicy-launch"}
		if out, err = Merge("config.toml", out, c, "bare", bare, false); err != nil || !strings.Contains(string(out), "args = []") {
			t.Errorf("no args (%v):\n%s", err, out)
		}
		for _, name := range []string{"a", "b", "c.d", "e"} {
			if out, err = Merge("config.toml", out, c, name, codexLaunch, false); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(codexServers(t, string(out))); n != 6 {
			t.Errorf("%d servers, want 6:\n%s", n, out)
		}
	}
	bad := &Launch{Command: "/usr/local/bin/mcpolicy-launch", Args: []string{"\xff"}}
	if out, err := Merge("config.toml", nil, c, "bad", bad, false); err == nil || out != nil || !strings.Contains(err.Error(), `args[0] "\xff" is not UTF-8`) {
		t.Errorf("a value that is not UTF-8: %q, %v", out, err)
	}
}

// FuzzCodexMerge: into any file that parses, with mcp_servers a table or
// absent, --force merges the entry, and a second write changes nothing.
// (The merge refuses a result that does not read back as the file with
// only the entry changed, so a wrong edit shows as an error here.)
func FuzzCodexMerge(f *testing.F) {
	for _, s := range codexShapes {
		f.Add(s.src, "alpha")
		f.Add(crlf(s.src), "my.server")
	}
	c, _ := clientcfg.LookupClient("codex")
	f.Fuzz(func(t *testing.T, src, server string) {
		doc := map[string]any{}
		if toml.Unmarshal([]byte(strings.TrimPrefix(src, "\ufeff")), &doc) != nil {
			return
		}
		if v, ok := doc["mcp_servers"]; ok {
			if _, table := v.(map[string]any); !table {
				return
			}
		}
		out, err := Merge("config.toml", []byte(src), c, server, codexLaunch, true)
		if !utf8.ValidString(server) {
			if err == nil || out != nil {
				t.Fatalf("a server name that is not UTF-8 was written: %q", out)
			}
			return
		}
		if err != nil {
			t.Fatalf("%v\n%q", err, src)
		}
		again, err := Merge("config.toml", out, c, server, codexLaunch, false)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent (%v):\n%q\n%q", err, out, again)
		}
	})
}
