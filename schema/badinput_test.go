package schema

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// badInputs are policies a person may write by mistake, each with the
// first line of its error: the position (line:col) of the mistake, the
// field, and plain words. No error may print CUE's schema or a bottom
// value (checked for all of them in TestBadInput).
var badInputs = []struct{ file, src, want string }{
	// An empty file: white space and comments only, in every format.
	{"p.yaml", "", `p.yaml:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.yaml", "  \n# only a comment\n\n", `p.yaml:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.yml", "--- # a document marker and nothing else\n", `p.yml:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.json", "", `p.json:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.json", " \n\t\r\n", `p.json:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.cue", "// a comment\n", `p.cue:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.cue", "// a comment\npackage p\n", `p.cue:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.jsonnet", "// a\n# b\n/* c\n */\n", `p.jsonnet:1:1: the file is empty: a policy needs version: "v1" and servers`},

	// YAML: a second document.
	{"p.yaml", "version: v1\nservers: {}\n---\nservers: {}\n", "p.yaml:3:1: a second YAML document starts here: a policy is one document"},
	{"p.yaml", "version: v1\nservers: {}\n---\n", "p.yaml:3:1: a second YAML document starts here: a policy is one document"},
	{"p.yaml", "version: v1\nservers: {}\n...\n---\nservers: {}\n", "p.yaml:4:1: a second YAML document starts here: a policy is one document"},

	// YAML: an alias with no anchor before it (the parser named no line);
	// "*a" in a string or a comment is no alias.
	{"p.yaml", "version: v1\nservers: {}\nx: \"*a\" # *a\ny: [1, *a]\n", "p.yaml:4:8: the YAML alias *a has no anchor &a before it"},
	{"p.yaml", "version: v1\nservers:\n  b: *base\n  a: &base {command: [x]}\n", "p.yaml:3:6: the YAML alias *base has no anchor &base before it"},
	{"p.yaml", "version: v1\nservers:\n  *a : {command: [x]}\n", "p.yaml:3:3: the YAML alias *a has no anchor &a before it"},
	{"p.yaml", "version: v1\nservers: {}\nx: &a [1, *a]\n", "p.yaml:3:11: x[1]: the YAML alias *a is inside the value anchored &a: it would repeat without end"},

	// YAML: tags other than the core ones (CUE's reader gave a line).
	{"p.yaml", "version: v1\nservers: {}\na: !!binary foo\n", "p.yaml:3:4: a: the YAML tag !!binary is not allowed in a policy"},
	{"p.yaml", "version: v1\nservers: !foo {}\n", "p.yaml:2:10: servers: the YAML tag !foo is not allowed in a policy"},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [!env HOME]\n", "p.yaml:4:15: servers.a.command[0]: the YAML tag !env is not allowed in a policy"},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    workdir: !!timestamp 2001-01-01\n", "p.yaml:5:14: servers.a.workdir: the YAML tag !!timestamp is not allowed in a policy"},

	// A key written twice (JSON printed "_|_ //", or nothing when the two
	// values were equal).
	{"p.json", "{\"version\": \"v1\",\n\"version\": \"v1\", \"servers\": {}}", "p.json:2:1: version: key declared twice (first at 1:2)"},
	{"p.json", "{\"version\": \"v1\", \"servers\": {\"a\": {\"command\": [\"x\"],\n  \"command\": [\"y\"]}}}", "p.json:2:3: servers.a.command: key declared twice (first at 1:37)"},
	{"p.json", "{\"version\": \"v1\", \"servers\": {\"a\": {\"command\": [\"x\"], \"mounts\": [\n  {\"source\": \"s\", \"target\": \"/t\", \"mode\": \"ro\", \"mode\": \"rw\"}]}}}", "p.json:2:49: servers.a.mounts[0].mode: key declared twice (first at 2:35)"},
	{"p.json", "{\"version\": \"v1\", \"servers\": {\"a-b\": {\"command\": [\"x\"]},\n  \"a-b\": {\"command\": [\"y\"]}}}", "p.json:2:3: servers.\"a-b\": server declared twice (first at p.json:1:31)"},
	{"p.yaml", "version: v1\nversion: v1\nservers: {}\n", "p.yaml:2:1: version: key declared twice (first at 1:1)"},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    command: [y]\n", "p.yaml:5:5: servers.a.command: key declared twice (first at 4:5)"},
	{"p.yaml", "version: v1\nservers:\n  a: {command: [x], mounts: [{source: s, target: /t, mode: ro, \"mode\": rw}]}\n", "p.yaml:3:64: servers.a.mounts[0].mode: key declared twice (first at 3:54)"},
	// In CUE a field declared twice is unification: two values conflict.
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], command: [\"y\"]}\n", `p.cue:2:24: servers.a.command.0: conflicting values "y" and "x"`},

	// A value of the wrong kind: the kind wanted, in words, not the schema.
	{"p.json", `{"servers":{"a":null}}`, "p.json:1:17: servers.a: a server must be an object (a mapping) with at least command or image, not null"},
	{"p.yaml", "version: v1\nservers:\n  a:\n", "p.yaml:3:5: servers.a: a server must be an object (a mapping) with at least command or image, not null"},
	{"p.cue", "version: \"v1\"\nservers: a: [\"x\"]\n", "p.cue:2:13: servers.a: a server must be an object (a mapping) with at least command or image, not a list"},
	{"p.jsonnet", "{version: \"v1\", servers: {a: \"x\"}}", `p.jsonnet:1:30: servers.a: a server must be an object (a mapping) with at least command or image, not a string ("x")`},
	{"p.json", `{"version": "v1", "servers": [1]}`, "p.json:1:30: servers: must be an object (a mapping) from server names to servers, not a list"},
	{"p.yaml", "version: v1\nservers:\n", "p.yaml:2:9: servers: must be an object (a mapping) from server names to servers, not null"},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "mounts": "x"}}}`, `p.json:1:65: servers.a.mounts: must be a list, not a string ("x")`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "mounts": [null]}}}`, "p.json:1:66: servers.a.mounts[0]: must be an object (a mapping), not null"},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    limits: 5\n", "p.yaml:5:13: servers.a.limits: must be an object (a mapping), not a number (5)"},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], scratch: true}\n", `p.cue:2:39: servers.a.scratch: must be {target: "/tmp", size: "64m"}, or a non-empty list of them (got true)`},

	// setenv: names are environment variable names, values strings (#34).
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], setenv: {\"A-B\": \"1\"}}\n", `p.cue:2:39: servers.a.setenv."A-B": "A-B" is not an environment variable name`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "setenv": {"N": 3}}}}`, `p.json:1:71: servers.a.setenv.N: must be a constant, non-secret value (a string), e.g. {GOFLAGS: "-mod=readonly"}; the names are environment variable names (got 3)`},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    setenv: [A]\n", "p.yaml:5:13: servers.a.setenv: must be an object (a mapping), not a list"},

	// credentials: keyed by env names, bound to named host:port (#41); the
	// compiler's checks are in compiler/credentials_test.go.
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], credentials: {\"A-B\": to: [\"h:1\"]}}\n", `p.cue:2:44: servers.a.credentials."A-B": "A-B" is not an environment variable name`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], credentials: A: {}}\n", `p.cue:2:43: servers.a.credentials.A.to: required field is missing: must be a non-empty list of "host:port" destinations, each also in network.allow and none a wildcard (a value is bound to named hosts), e.g. ["api.github.com:443"]`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "credentials": {"A": {"to": ["*.h.org:443"]}}}}}`, `p.json:1:84: servers.a.credentials.A.to[0]: must be a non-empty list of "host:port" destinations, each also in network.allow and none a wildcard (a value is bound to named hosts), e.g. ["api.github.com:443"] (got "*.h.org:443")`},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    credentials: {A: {to: [\"h:1\"], from: {command: []}}}\n", `p.yaml:5:43: servers.a.credentials.A.from.command: must be a non-empty argv of non-empty strings run on the host at spawn, e.g. ["op", "read", "op://vault/gh/token"] (got [])`},
	{"p.jsonnet", `{version: "v1", servers: {a: {command: ["x"], credentials: {A: {to: ["h:1"], as: {header: "X Key"}}}}}}`, "p.jsonnet:1:91: servers.a.credentials.A.as.header: must be a header name (an RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~), e.g. \"Authorization\" (got \"X Key\")"},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], credentials: A: {to: [\"h:1\"], as: format: \"Bearer\"}}\n", `p.cue:2:72: servers.a.credentials.A.as.format: must be the header's value with "{}" where the credential goes, e.g. "Bearer {}" (got "Bearer")`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], credentials: A: {to: [\"h:1\"], from: env: \"1A\"}}\n", `p.cue:2:71: servers.a.credentials.A.from.env: must be an environment variable NAME, e.g. "GITHUB_TOKEN" (got "1A")`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], credentials: A: {to: [\"h:1\"], as: query: \"a&b\"}}\n", `p.cue:2:71: servers.a.credentials.A.as.query: must be a query parameter name (letters, digits and ._~-), e.g. "access_token" (got "a&b")`},

	// scratch: one, or a non-empty list (#34).
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], scratch: []}\n", `p.cue:2:39: servers.a.scratch: must be {target: "/tmp", size: "64m"}, or a non-empty list of them (got [])`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], scratch: [{size: \"1m\"}, {target: \"/c\"}]}\n", `p.cue:2:54: servers.a.scratch[1].size: required field is missing: must be a size such as "64m" or "1g" (a scratch tmpfs must be bounded)`},

	// tools: the tool surface (#40); the compiler's checks are in compiler/tools_test.go.
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], tools: {deny: [\"x\"]}}\n", `p.cue:2:30: servers.a.tools.allow: required field is missing: must be a non-empty list of tool names or globs (1 to 128 letters, digits, '_', '-', '.', and * ? [...]), e.g. ["read_graph", "search_*"]`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "tools": {"allow": []}}}}`, `p.json:1:66: servers.a.tools.allow: must be a non-empty list of tool names or globs (1 to 128 letters, digits, '_', '-', '.', and * ? [...]), e.g. ["read_graph", "search_*"] (got [])`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], tools: {allow: [\"a b\"]}}\n", `p.cue:2:46: servers.a.tools.allow[0]: must be a non-empty list of tool names or globs (1 to 128 letters, digits, '_', '-', '.', and * ? [...]), e.g. ["read_graph", "search_*"] (got "a b")`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "tools": {"allow": ["a"], "args": {"a": {"p": {"maxBytes": 0}}}}}}}`, `p.json:1:114: servers.a.tools.args.a.p.maxBytes: must be a whole number of bytes greater than 0, at most 1073741824 (got 0)`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], tools: {allow: [\"a\"], args: a: p: maxBytes: -1}}\n", `p.cue:2:74: servers.a.tools.args.a.p.maxBytes: must be a whole number of bytes greater than 0, at most 1073741824 (got -1)`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "tools": {"allow": ["a"], "args": {"a": {"p": {"under": ["w"]}}}}}}}`, `p.json:1:112: servers.a.tools.args.a.p.under[0]: must be a non-empty list of absolute, clean sandbox paths, e.g. ["/workspace"] (got "w")`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], tools: {allow: [\"a\"], args: a: p: under: [\"~/w\"]}}\n", `p.cue:2:72: servers.a.tools.args.a.p.under[0]: must be a non-empty list of absolute, clean sandbox paths, e.g. ["/workspace"] (got "~/w")`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "tools": {"allow": ["a"], "args": {"a b": {"p": {"under": ["/w"]}}}}}}}`, `p.json:1:90: servers.a.tools.args."a b": "a b" is not a tool name or glob`},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    tools: {allow: [a], onPinChange: warn}\n", `p.yaml:5:38: servers.a.tools.onPinChange: must be "hide" or "refuse" (got "warn")`},
	{"p.jsonnet", `{version: "v1", servers: {a: {command: ["x"], tools: {allow: ["a"], args: {a: {p: {enum: []}}}}}}}`, `p.jsonnet:1:90: servers.a.tools.args.a.p.enum: must be a non-empty list of strings, e.g. ["fast", "safe"] (got [])`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], tools: {allow: [\"a\"], args: a: p: {glob: \"x\"}}}\n", `p.cue:2:65: servers.a.tools.args.a.p.glob: unknown field "glob"`},

	// hide: paths relative to the mount's source, clean, a glob in the last
	// element only (#42).
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    mounts: [{source: ., target: /w, hide: [\"../x\"]}]\n", `p.yaml:5:45: servers.a.mounts[0].hide[0]: must be a list of paths relative to the mount's source, e.g. [".env*", "secrets", "config/*.pem"], each clean and slash-separated, without ".." or ".", glob characters (* ? [...]) in its last element only (got "../x")`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], mounts: [{source: \".\", target: \"/w\", hide: [\"*/x\"]}]}\n", `p.cue:2:74: servers.a.mounts[0].hide[0]: must be a list of paths relative to the mount's source, e.g. [".env*", "secrets", "config/*.pem"], each clean and slash-separated, without ".." or ".", glob characters (* ? [...]) in its last element only (got "*/x")`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "mounts": [{"source": ".", "target": "/w", "hide": ["/etc"]}]}}}`, `p.json:1:107: servers.a.mounts[0].hide[0]: must be a list of paths relative to the mount's source, e.g. [".env*", "secrets", "config/*.pem"], each clean and slash-separated, without ".." or ".", glob characters (* ? [...]) in its last element only (got "/etc")`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "mounts": [{"source": ".", "target": "/w", "hide": ["."]}]}}}`, `p.json:1:107: servers.a.mounts[0].hide[0]: must be a list of paths relative to the mount's source, e.g. [".env*", "secrets", "config/*.pem"], each clean and slash-separated, without ".." or ".", glob characters (* ? [...]) in its last element only (got ".")`},
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    mounts: [{source: ., target: /w, hide: \".env\"}]\n", `p.yaml:5:44: servers.a.mounts[0].hide: must be a list of paths relative to the mount's source, e.g. [".env*", "secrets", "config/*.pem"], each clean and slash-separated, without ".." or ".", glob characters (* ? [...]) in its last element only (got ".env")`},

	// Targets: absolute, or "~/..." below the home, never "~" alone (#34).
	{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x]\n    mounts: [{source: ~/d, target: \"~\"}]\n", `p.yaml:5:36: servers.a.mounts[0].target: must be an absolute, clean path inside the sandbox, e.g. "/workspace", or "~/..." below the home of the user who starts the server (never "~" itself: the whole home) (got "~")`},
	{"p.cue", "version: \"v1\"\nservers: a: {command: [\"x\"], workdir: \"~//d\"}\n", `p.cue:2:39: servers.a.workdir: must be an absolute, clean path inside the sandbox, e.g. "/workspace", or "~/..." below the home of the user who starts the server (never "~" itself: the whole home) (got "~//d")`},
	{"p.json", `{"version": "v1", "servers": {"a": {"command": ["x"], "mounts": [{"source": "~/d", "target": "~d"}]}}}`, `p.json:1:94: servers.a.mounts[0].target: must be an absolute, clean path inside the sandbox, e.g. "/workspace", or "~/..." below the home of the user who starts the server (never "~" itself: the whole home) (got "~d")`},

	// The top level is not an object.
	{"p.json", "[1]", "p.json:1:1: the top level must be an object (a mapping) with version and servers, not a list"},
	{"p.json", "\n null", "p.json:2:2: the top level must be an object (a mapping) with version and servers, not null"},
	{"p.yaml", "# a list\n- 1\n", "p.yaml:2:1: the top level must be an object (a mapping) with version and servers, not a list"},
	{"p.yaml", "hello\n", `p.yaml:1:1: the top level must be an object (a mapping) with version and servers, not a string ("hello")`},
	{"p.yaml", "~\n", "p.yaml:1:1: the top level must be an object (a mapping) with version and servers, not null"},
	{"p.cue", "[1]\n", "p.cue:1:1: the top level must be an object (a mapping) with version and servers, not a list"},
	{"p.jsonnet", "// a list\nlocal a = 1; [a]\n", "p.jsonnet:2:1: the top level must be an object (a mapping) with version and servers, not a list"},

	// A byte order mark: ignored at the start, in every format (columns on
	// line 1 are counted without it, as an editor shows them); refused
	// anywhere else.
	{"p.json", "\ufeff{\"version\": 1, \"servers\": {}}", `p.json:1:13: version: must be "v1" (the only schema version) (got 1)`},
	{"p.yaml", "\ufeffversion: 1\nservers: {}\n", `p.yaml:1:10: version: must be "v1" (the only schema version) (got 1)`},
	{"p.cue", "\ufeffversion: 1\nservers: {}\n", `p.cue:1:10: version: must be "v1" (the only schema version) (got 1)`},
	{"p.jsonnet", "\ufeff{version: 1, servers: {}}", `p.jsonnet:1:11: version: must be "v1" (the only schema version) (got 1)`},
	{"p.json", "\ufeff", `p.json:1:1: the file is empty: a policy needs version: "v1" and servers`},
	{"p.yaml", "version: v1\nservers: {}\n\ufeff", "p.yaml:3:1: a byte order mark (U+FEFF) inside the file"},
	{"p.json", "{\"version\": \"v1\", \"servers\": {\"\ufeffa\": {\"image\": \"x:1\"}}}", "p.json:1:32: a byte order mark (U+FEFF) inside the file"},
}

// TestBadInput: each mistake is refused at its line and column, with the
// field and plain words, the same through each way a policy is loaded.
func TestBadInput(t *testing.T) {
	for _, c := range badInputs {
		paths := []loadPath{throughCUE, throughPlainCUE, throughGo}
		for _, through := range paths {
			_, err := loadBytes(c.file, []byte(c.src), ".", through)
			if err == nil {
				t.Errorf("%s %q (path %d): loaded; want %q", c.file, c.src, through, c.want)
				continue
			}
			msg := err.Error()
			if first, _, _ := strings.Cut(msg, "\n"); first != c.want {
				t.Errorf("%s %q (path %d):\n got %s\nwant %s", c.file, c.src, through, first, c.want)
			}
			for _, leak := range []string{"_|_", "#Server", "description?", "{[string]", "ï"} {
				if strings.Contains(msg, leak) {
					t.Errorf("%s %q: the error shows %q:\n%s", c.file, c.src, leak, msg)
				}
			}
			if !strings.Contains(msg, "\n\thint: ") && !strings.Contains(c.want, ": must be") {
				t.Errorf("%s %q: no hint:\n%s", c.file, c.src, msg)
			}
		}
	}
}

// TestGoodInputStillLoads: what the checks above must not refuse.
func TestGoodInputStillLoads(t *testing.T) {
	for _, c := range []struct {
		file, src string
		servers   int
	}{
		// Anchors and aliases are allowed: `b: *base` says in the file
		// that b is a's value.
		{"p.yaml", "version: v1\nservers:\n  a: &base\n    command: [x]\n  b: *base\n", 2},
		{"p.yaml", "version: v1\nservers:\n  a: {command: &cmd [x, -v]}\n  b: {command: *cmd}\n", 2},
		// The core tags say what a value is read as.
		{"p.yaml", "version: v1\nservers:\n  a:\n    command: [!!str 1]\n    user: !!str 1000:1000\n    limits: !!map {pids: !!int 10, cpus: !!float 0.5}\n", 1},
		// A document end marker, and a start marker on the only document.
		{"p.yaml", "---\nversion: v1\nservers: {}\n...\n", 0},
		// "*" where no alias can be.
		{"p.yaml", "version: v1\nservers:\n  a:\n    command: [\"*x\", a*x, '*x'] # *x\n    description: |\n      *x\n", 1},
		// A byte order mark at the start, in every format.
		{"p.yaml", "\ufeffversion: v1\nservers: {a: {command: [x]}}\n", 1},
		{"p.json", "\ufeff{\"version\": \"v1\", \"servers\": {\"a\": {\"command\": [\"x\"]}}}", 1},
		{"p.cue", "\ufeffversion: \"v1\"\nservers: a: command: [\"x\"]\n", 1},
		{"p.jsonnet", "\ufeff{version: \"v1\", servers: {a: {command: [\"x\"]}}}", 1},
		// "~/..." targets, scratch targets and workdir (#34).
		{"p.yaml", "version: v1\nservers:\n  a:\n    command: [x, ~/d/f]\n    workdir: ~/d\n    mounts: [{source: ~/d, target: ~/d}]\n    scratch: {target: ~/.cache/x, size: 1m}\n", 1},
		// In CUE a field declared twice with one value is unification.
		{"p.cue", "version: \"v1\"\nversion: \"v1\"\nservers: {}\n", 0},
	} {
		for _, through := range []loadPath{throughCUE, throughPlainCUE, throughGo} {
			p, err := loadBytes(c.file, []byte(c.src), ".", through)
			if err != nil {
				t.Errorf("%s %q (path %d): %v", c.file, c.src, through, err)
			} else if len(p.Servers) != c.servers {
				t.Errorf("%s %q (path %d): %d servers, want %d", c.file, c.src, through, len(p.Servers), c.servers)
			}
		}
	}
}

// TestYAMLAliasBomb: aliases that expand without bound (a billion laughs:
// nine levels of nine) are refused at the alias that goes past the bound,
// at once and in little memory; so is a file of many small ones.
func TestYAMLAliasBomb(t *testing.T) {
	var laughs strings.Builder
	laughs.WriteString("version: v1\nservers: {}\na0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		laughs.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 9 {
			if j > 0 {
				laughs.WriteString(", ")
			}
			laughs.WriteString("*a" + string(rune('0'+i-1)))
		}
		laughs.WriteString("]\n")
	}
	// Many aliases of a small anchor: each is cheap, together too many.
	many := "version: v1\nservers: {}\nbase: &b [x, y, z, w]\nlist:\n" + strings.Repeat("- *b\n", 20000)
	for _, c := range []struct{ name, src, want string }{
		{"billion laughs", laughs.String(), "p.yaml:7:30: a4[4]: YAML aliases expand to more than 50000 values here"},
		{"many aliases", many, "p.yaml:8338:3: list[8333]: YAML aliases expand to more than 50000 values here"},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := LoadBytes("p.yaml", []byte(c.src), ".")
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatalf("%s: loaded", c.name)
		}
		if first, _, _ := strings.Cut(err.Error(), "\n"); first != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, first, c.want)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
			t.Errorf("%s: allocated %d MiB", c.name, alloc>>20)
		}
		t.Logf("%s: %v, %d KiB", c.name, took, (after.TotalAlloc-before.TotalAlloc)>>10)
	}
}

// TestDeepNesting: objects and lists nested past maxNesting are refused
// at the first one too deep, at once (CUE's evaluation of 10,000 levels,
// which the JSON and YAML readers allow, took 20 to 40 s), in every
// format; a policy's own depth loads.
func TestDeepNesting(t *testing.T) {
	const nestingAllocLimit = 40 << 20
	const n = 9990
	open, shut := strings.Repeat(`{"a": `, n), strings.Repeat("}", n)
	for _, c := range []struct{ file, src, want string }{
		// The 101st object or list: servers, a and x are three, and in
		// JSON the top level is one more.
		{"p.json", `{"version": "v1", "servers": {"a": {"x": ` + open + "1" + shut + "}}}", "p.json:1:624: objects and lists nested more than 100 deep"},
		{"p.yaml", "version: v1\nservers: {a: {x: " + strings.Repeat("[", n) + strings.Repeat("]", n) + "}}\n", "p.yaml:2:116: objects and lists nested more than 100 deep"},
		{"p.cue", "version: \"v1\"\nservers: a: x: " + strings.Repeat("{a: ", n) + "1" + shut + "\n", "p.cue:2:408: objects and lists nested more than 100 deep"},
		{"p.jsonnet", "local f(n) = if n == 0 then 1 else {a: f(n - 1)};\n{version: 'v1', servers: {}, x: f(150)}\n", "p.jsonnet: Jsonnet error: the policy renders to objects and lists nested more than 100 deep"},
	} {
		for _, through := range []loadPath{throughCUE, throughGo} {
			// Bounded by what it allocates, not by the clock (a loaded
			// machine stretches any time): refused at the 101st level,
			// the worst here allocates 27 MiB; read to the bottom, each
			// format allocates 52 MiB or more.
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := loadBytes(c.file, []byte(c.src), ".", through)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s (path %d): %v, %d KiB", c.file, through, took, alloc>>10)
			if alloc > nestingAllocLimit {
				t.Errorf("%s (path %d): allocated %d MiB (more than %d)", c.file, through, alloc>>20, nestingAllocLimit>>20)
			}
			if err == nil {
				t.Errorf("%s (path %d): loaded", c.file, through)
			} else if first, _, _ := strings.Cut(err.Error(), "\n"); first != c.want {
				t.Errorf("%s (path %d):\n got %s\nwant %s", c.file, through, first, c.want)
			}
		}
	}
	deepest := "version: v1\nservers:\n  a:\n    command: [x]\n    network: {allow: [\"h:1\"]}\n    mounts: [{source: s, target: /t}]\n    waive: [{rule: R, reason: why}]\n"
	if _, err := LoadBytes("p.yaml", []byte(deepest), "."); err != nil {
		t.Errorf("a policy's own depth: %v", err)
	}
}

// TestJsonnetImportIsText: a file a Jsonnet policy imports is held to a
// policy file's rule: a byte order mark at its start is ignored, a byte
// that is not UTF-8 is refused at its line and column in that file
// (go-jsonnet read it as U+FFFD).
func TestJsonnetImportIsText(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "mcpolicy.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mcpolicy.d/bom.libsonnet", "\ufeff{command: ['x']}")
	write("mcpolicy.d/bad.libsonnet", "{command: [\n 'a\xffb']}")
	write("mcpolicy.d/bad.txt", "a\xffb")
	for _, c := range []struct{ server, want string }{
		{"import 'mcpolicy.d/bom.libsonnet'", ""},
		{"import 'mcpolicy.d/bad.libsonnet'", "mcpolicy.d/bad.libsonnet:2:4: byte 0xff is not UTF-8 text"},
		{"{command: [importstr 'mcpolicy.d/bad.txt']}", "mcpolicy.d/bad.txt:1:2: byte 0xff is not UTF-8 text"},
	} {
		write("mcpolicy.jsonnet", "{version: 'v1', servers: {a: "+c.server+"}}")
		_, err := Load(filepath.Join(root, "mcpolicy.jsonnet"), root)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.server, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), filepath.Join(root, c.want))):
			t.Errorf("%s: got %v\nwant %s", c.server, err, c.want)
		}
	}
}
