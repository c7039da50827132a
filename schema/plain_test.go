package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/rogpeppe/go-internal/txtar"
)

// plainPolicies exercise every field decodePlain reads, present and
// absent, in each format: decodePlain must read all of them.
var plainPolicies = map[string]string{
	"minimal.cue": `version: "v1"
servers: s: image: "x:1"
`,
	"package.cue": `package policy

version: "v1"
servers: "a.b_c": {image: "x:1", user: "0:0"} @attr(ignored)
`,
	"every-field.cue": `// comments are not declarations
version: "v1"
servers: {
	"a-b": {
		description: """
			multi
			line
			"""
		image:   "reg.example:5000/x/y:1.2@sha256:0123456789abcdef0123456789abcdef"
		command: ["node", #"C:\raw"#, "--x=\u00e9"]
		workdir: "/workspace"
		user:    "invoker"
		mounts: [{source: "src", target: "/src"}, {
			source: "~/.cache"
			target: "/c"
			mode:   "rw"
		}]
		scratch: size: "1g"
		proc:    true
		env: ["A", "B_2"]
		network: allow: ["example.com:443", "[::1]:80", "*.x.org:8080"]
		unprotect: [".git", ".env*"]
		limits: {memory: "512m", pids: 128, cpus: 0.5}
		waive: [{rule: "NETWORK_OPEN", reason: "why"}, {rule: "X", reason: "r", expires: "2030-01-01"}]
		backends: ["bwrap", "landlock"]
		runtime: "python"
		accept: ["landlock-tcp-only"]
		credentials: {
			GITHUB_TOKEN: {to: ["example.com:443"]}
			"OPENAI_KEY": {from: command: ["op", "read", "op://v/i/f"], to: ["example.com:443", "[::1]:80"], as: {header: "X-Key", format: "{}"}}
			Q: {from: env: "QQ", to: ["example.com:443"], as: query: "key"}
		}
		tools: {
			allow: ["read_graph", "search_*"]
			deny: ["delete_*"]
			args: {
				"read_file": path: {under: ["/workspace", "/tmp"]}
				search_nodes: {query: {pattern: "^[a-z ]+$", maxBytes: 256}, mode: enum: ["fast", "safe"]}
			}
			pin:         true
			onPinChange: "refuse"
		}
	}
	tl: {command: ["x"], tools: allow: ["*"]}
	plain: {command: ["/bin/true"], network: "none", user: "0:0", scratch: {target: "/t", size: "64m"}, limits: {cpus: 2}, proc: false}
	lim: {image: "x", limits: {pids: 1}, mounts: []}
}
`,
	"every-field.json": `{"version": "v1", "servers": {
  "j": {"image": "x", "command": ["a"], "user": "1:2", "workdir": "/w",
        "mounts": [{"source": "a", "target": "/a", "mode": "rw"}, {"source": "/b", "target": "/b"}],
        "scratch": {"size": "8m"}, "proc": true, "env": ["E"], "network": {"allow": ["h:1"]},
        "limits": {"memory": "1g", "pids": 10, "cpus": 1.25}, "waive": [{"rule": "R", "reason": "x"}],
        "credentials": {"T": {"to": ["h:1"]}, "S": {"from": {"env": "E"}, "to": ["h:1"], "as": {"query": "k"}}},
        "tools": {"allow": ["a", "b?"], "deny": ["c"], "args": {"a": {"p": {"under": ["/w"]}, "q": {"enum": ["x"]}}}, "pin": false}},
  "k": {"command": ["b"], "runtime": "static"}
}}
`,
	"every-field.yaml": `version: v1
servers:
  y:
    image: "x:1"
    command: [a, "b c"]
    user: "1000:1000"
    mounts:
      - source: src
        target: /src
      - {source: out, target: /out, mode: rw}
    scratch: {target: /tmp, size: 64m}
    proc: true
    env: [TOKEN]
    network:
      allow: ["h:443"]
    limits: {memory: 2g, pids: 64, cpus: 3}
    accept: [rw-holds-project]
  z:
    command: [true]
`,
}

// notPlainPolicies are valid policies decodePlain leaves to decode.
var notPlainPolicies = map[string]string{
	"reference.cue": `version: "v1"
#base: {image: "x", env: ["A"]}
servers: a: #base
`,
	"twice.cue": `version: "v1"
servers: a: image: "x"
servers: a: env: ["A"]
`,
	"comprehension.cue": `version: "v1"
servers: {for n in ["a", "b"] {(n): image: "x"}}
`,
	"let.cue": `version: "v1"
let img = "x"
servers: a: image: img
`,
	"number-forms.cue": `version: "v1"
servers: a: {image: "x", limits: {pids: 1K, cpus: 1e1}}
`,
	"definition.cue": "version: \"v1\"\nservers: a: {image: \"x\", #d: 1}\n",
	"interpolation.cue": `version: "v1"
_v: "1"
servers: a: image: "x:\(_v)"
`,
}

// invalidPolicies are plain but invalid: loadPlain must refuse each, for
// the full path to report it.
var invalidPolicies = map[string]string{
	"unknown-field.cue":   "version: \"v1\"\nservers: a: {image: \"x\", imgae: \"y\"}\n",
	"unknown-nested.cue":  "version: \"v1\"\nservers: a: {image: \"x\", mounts: [{source: \"a\", target: \"/a\", mdoe: \"rw\"}]}\n",
	"unknown-top.cue":     "version: \"v1\"\nextra: 1\nservers: {}\n",
	"no-version.cue":      "servers: a: image: \"x\"\n",
	"wrong-version.json":  `{"version": "v2", "servers": {}}`,
	"bad-user.yaml":       "version: v1\nservers:\n  a: {image: x, user: root}\n",
	"bad-mode.cue":        "version: \"v1\"\nservers: a: {image: \"x\", mounts: [{source: \"a\", target: \"/a\", mode: \"rwx\"}]}\n",
	"missing-target.cue":  "version: \"v1\"\nservers: a: {image: \"x\", mounts: [{source: \"a\"}]}\n",
	"scratch-no-size.cue": "version: \"v1\"\nservers: a: {image: \"x\", scratch: {}}\n",
	"empty-command.cue":   "version: \"v1\"\nservers: a: {command: []}\n",
	"pids-float.cue":      "version: \"v1\"\nservers: a: {image: \"x\", limits: pids: 1.5}\n",
	"cpus-zero.cue":       "version: \"v1\"\nservers: a: {image: \"x\", limits: cpus: 0}\n",
	"bad-egress.cue":      "version: \"v1\"\nservers: a: {image: \"x\", network: allow: [\"no-port\"]}\n",
	"network-string.cue":  "version: \"v1\"\nservers: a: {image: \"x\", network: \"all\"}\n",
	"bad-backend.cue":     "version: \"v1\"\nservers: a: {image: \"x\", backends: [\"qemu\"]}\n",
	"bad-protected.cue":   "version: \"v1\"\nservers: a: {image: \"x\", unprotect: [\".gitx\"]}\n",
	"bad-waiver.cue":      "version: \"v1\"\nservers: a: {image: \"x\", waive: [{rule: \"x\", reason: \" \"}]}\n",
	"bytes.cue":           "version: \"v1\"\nservers: a: {image: 'x'}\n",
	"env-value.json":      `{"version": "v1", "servers": {"a": {"image": "x", "env": ["A=1"]}}}`,
	"proc-string.json":    `{"version": "v1", "servers": {"a": {"image": "x", "proc": "true"}}}`,
	"proc-number.cue":     "version: \"v1\"\nservers: a: {image: \"x\", proc: 1}\n",
}

// TestDecodePlainMatchesCUE: for every policy, the golden cases' and
// examples' included, decodePlain gives what decode gives (values,
// defaults, positions) or declines.
func TestDecodePlainMatchesCUE(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{}
	for name, src := range plainPolicies {
		files[name] = []byte(src)
	}
	for name, src := range notPlainPolicies {
		files[name] = []byte(src)
	}
	for name, src := range invalidPolicies {
		files[name] = []byte(src)
	}
	cases, _ := filepath.Glob("../golden/testdata/*.txtar")
	for _, c := range cases {
		a, err := txtar.ParseFile(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if ext := filepath.Ext(f.Name); slices.Contains(Extensions, ext) && ext != ".jsonnet" && !strings.HasPrefix(f.Name, "want") {
				files[filepath.Base(c)+"/"+f.Name] = f.Data
			}
		}
	}
	examples, _ := filepath.Glob("../examples/*/mcpolicy.*")
	for _, e := range examples {
		src, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		files[e] = src
	}
	fast := 0
	for name, src := range files {
		file := filepath.Join(dir, name)
		slow, slowErr := loadBytes(file, src, dir, throughCUE)
		got, gotErr := loadBytes(file, src, dir, throughPlainCUE)
		if fmt.Sprint(gotErr) != fmt.Sprint(slowErr) {
			t.Errorf("%s: error %v, through CUE %v", name, gotErr, slowErr)
			continue
		}
		if _, invalid := invalidPolicies[name]; invalid && slowErr == nil {
			t.Errorf("%s: valid", name)
		}
		if slowErr != nil {
			continue
		}
		if !reflect.DeepEqual(got, slow) {
			t.Errorf("%s: decodePlain\n%+v\nthrough CUE\n%+v", name, got, slow)
		}
		_, plain := loadPlain(file, src, partDef, false)
		_, mustBePlain := plainPolicies[name]
		_, mustNot := notPlainPolicies[name]
		switch {
		case mustBePlain && !plain:
			t.Errorf("%s: decodePlain declined a plain policy", name)
		case mustNot && plain:
			t.Errorf("%s: decodePlain read a policy that is not plain", name)
		}
		if plain {
			fast++
		}
	}
	if fast < len(plainPolicies)+10 {
		t.Errorf("only %d policies read by decodePlain", fast)
	}
}

// TestPlainDefaultsMatchSchema: decodePlain's defaults are the schema's,
// and the schema has no other default for it to miss.
func TestPlainDefaultsMatchSchema(t *testing.T) {
	sch := cuecontext.New().CompileBytes(schemaSource)
	want := map[string]string{
		"#Server.user": defaultUser, "#Server.network": defaultNetwork, "#Server.runtime": defaultRuntime,
		"#Mount.mode": defaultMountMode, "#Scratch.target": defaultScratchTarget,
		"#Tools.onPinChange": defaultOnPinChange,
	}
	got := map[string]string{}
	for _, def := range []string{"#Policy", "#Server", "#Mount", "#Scratch", "#Egress", "#Limits", "#Waiver", "#Tools", "#ArgRule"} {
		it, err := sch.LookupPath(cue.ParsePath(def)).Fields(cue.Optional(true))
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			d, ok := it.Value().Default()
			if !ok || d.Validate(cue.Concrete(true)) != nil {
				continue // a type, or a list of one ([...string] & [_, ...]): no value to miss
			}
			if n, err := d.Len().Int64(); d.Kind() == cue.ListKind && err == nil && n == 0 {
				continue // an open list: absent, decode reads it as empty too
			}
			{
				got[def+"."+strings.TrimSuffix(it.Selector().String(), "?")] = fmt.Sprint(d)
			}
		}
	}
	for k, v := range got {
		got[k] = strings.Trim(v, `"`)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema defaults %v\ndecodePlain's  %v", got, want)
	}
}

// TestValidPlainSplit: a long list of servers is validated in parts, and
// a server that does not fit is found in any of them.
func TestValidPlainSplit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	policy := func(bad int) []byte {
		var b strings.Builder
		b.WriteString("version: \"v1\"\nservers: {\n")
		for i := range 4 * parallelFrom {
			user, extra := "1000:1000", ""
			switch {
			case i == bad && i%2 == 0:
				user = "root"
			case i == bad:
				extra = `, imgae: "x"`
			}
			fmt.Fprintf(&b, "\t\"s%d\": {image: \"x:%d\", user: %q, mounts: [{source: \"s%d\", target: \"/w\"}]%s}\n", i, i, user, i, extra)
		}
		b.WriteString("}\n")
		return []byte(b.String())
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "mcpolicy.cue")
	for _, bad := range []int{-1, 0, parallelFrom + 1, 2*parallelFrom + 3, 4*parallelFrom - 1} {
		src := policy(bad)
		got, gotErr := loadBytes(file, src, dir, throughPlainCUE)
		slow, slowErr := loadBytes(file, src, dir, throughCUE)
		if fmt.Sprint(gotErr) != fmt.Sprint(slowErr) || (bad >= 0) != (gotErr != nil) {
			t.Errorf("bad server %d: error %v, through CUE %v", bad, gotErr, slowErr)
		}
		if !reflect.DeepEqual(got, slow) {
			t.Errorf("bad server %d: the policies differ", bad)
		}
		if _, ok := loadPlain(file, src, partDef, false); ok != (bad < 0) {
			t.Errorf("bad server %d: loadPlain ok = %v", bad, ok)
		}
	}
}

// partDef is #Policy of schemaPart, compiled into a context of its own.
func partDef() cue.Value {
	return compileSchema(cuecontext.New(), "#Policy").LookupPath(cue.MakePath(cue.Def("#Policy")))
}
