package schema

// Differential tests: the fast paths (loadPlain: decodePlain, then
// fitsPlain or validPlain with schemaPart) against the full path
// (throughCUE: every policy through CUE's evaluation and decode), and the
// partial schema against the whole one. loadBytes's loadPath selects the
// path.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/rogpeppe/go-internal/txtar"
)

var fuzzExts = []string{".cue", ".json", ".yaml"}

// seedPolicies returns every non-Jsonnet policy of golden/testdata and
// examples, and the plain tests' own, by name.
func seedPolicies(t testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for _, m := range []map[string]string{plainPolicies, notPlainPolicies, invalidPolicies} {
		for name, src := range m {
			files[name] = []byte(src)
		}
	}
	cases, _ := filepath.Glob("../golden/testdata/*.txtar")
	for _, c := range cases {
		a, err := txtar.ParseFile(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range a.Files {
			if ext := filepath.Ext(f.Name); slices.Contains(fuzzExts, ext) && !strings.HasPrefix(f.Name, "want") {
				files[filepath.Base(c)+"/"+f.Name] = f.Data
			}
		}
	}
	examples, _ := filepath.Glob("../examples/*/mcpolicy.*")
	for _, e := range examples {
		if !slices.Contains(fuzzExts, filepath.Ext(e)) {
			continue
		}
		src, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		files[e] = src
	}
	return files
}

// checkAgree loads src as file through each path and reports any
// difference: error or not, the error text, the decoded policy (values
// and positions). fitsPlain must not accept what CUE refuses. It also
// validates the data against #Policy of the whole schema and of
// schemaPart("#Policy") and requires the same verdict and message.
// It returns whether the fast path read the file (decodePlain and
// validPlain).
func checkAgree(t testing.TB, dir, name string, src []byte) (plain bool) {
	t.Helper()
	file := filepath.Join(dir, name)
	slow, slowErr := loadBytes(file, src, dir, throughCUE)
	_, plain = loadPlain(file, src, partDef, false)
	if _, decls, ok := parsePlain(file, src); ok && fitsPlain(decls) && (!plain || slowErr != nil) {
		t.Errorf("%s: fitsPlain accepts what CUE refuses (validPlain %v, CUE's error %v)\nsrc:\n%s", name, plain, slowErr, src)
	}
	for _, through := range []loadPath{throughPlainCUE, throughGo} {
		got, gotErr := loadBytes(file, src, dir, through)
		if fmt.Sprint(gotErr) != fmt.Sprint(slowErr) {
			t.Errorf("%s (plain=%v, path %d): error\n  fast: %v\n  CUE:  %v\nsrc:\n%s", name, plain, through, gotErr, slowErr, src)
			return plain
		}
		if slowErr == nil && !reflect.DeepEqual(got, slow) {
			g, _ := json.MarshalIndent(got, "", " ")
			s, _ := json.MarshalIndent(slow, "", " ")
			t.Errorf("%s (plain=%v, path %d): policies differ\n  fast: %s\n  CUE:  %s\nsrc:\n%s", name, plain, through, g, s, src)
		}
	}

	// schemaPart against the whole schema, on the data the full path builds.
	ctx := cuecontext.New()
	data, _, errs := parseData(ctx, file, src, dir)
	if errs != nil || data.Err() != nil {
		return plain
	}
	part := compileSchema(ctx, "#Policy").LookupPath(cue.MakePath(cue.Def("#Policy")))
	whole := ctx.CompileBytes(schemaSource, cue.Filename(schemaFile)).LookupPath(cue.MakePath(cue.Def("#Policy")))
	pe := part.Unify(data).Validate(cue.Concrete(true))
	we := whole.Unify(data).Validate(cue.Concrete(true))
	if (pe == nil) != (we == nil) || fmt.Sprint(pe) != fmt.Sprint(we) {
		t.Errorf("%s: schemaPart verdict %v, whole schema %v\nsrc:\n%s", name, pe, we, src)
	} else if pe != nil {
		// The messages users see: @expect sentences and allowed field names
		// are read from the (partial) schema.
		pm := convertCUEError(pe, file, data, part, nil).Err()
		wm := convertCUEError(we, file, data, whole, nil).Err()
		if fmt.Sprint(pm) != fmt.Sprint(wm) {
			t.Errorf("%s: schemaPart message\n  %v\nwhole schema\n  %v", name, pm, wm)
		}
	}
	return plain
}

// Tricky values and declarations the structured mutator splices in.
var (
	trickyStrings = []string{
		`"\u002e\u002e/x"`, `"/\u002e\u002e/etc"`, `"\x00"`, `"a\u0000b"`, `#"/raw"#`, `#"\#(x)"#`, `##"r"##`,
		"\"\"\"\n\t\t/multi\n\t\t\"\"\"", `"rw"`, `"ro"`, `"RW"`, `"rw "`, `"r\u0077"`, `"\/x"`, `"\ud800"`,
		`"none"`, `"no\u006ee"`, `"1000:1000"`, `"0:0"`, `"invoker"`, `"root"`, `"h:443"`, `"*.x:80"`,
		`'bytes'`, `null`, `true`, `1`, `1_000`, `0x3e8`, `1e3`, `1K`, `1Ki`, `1000.0`, `0.5`, `-1`, `.5`,
		`"x" | "y"`, `*"rw" | "ro"`, `"x" & string`, `string`, `_`, `[...]`, `{}`, `[]`, `"\(1)"`,
		`"a" + "b"`, `("ro")`, `"\t"`, `"é"`, `"e\u0301"`,
	}
	trickyDecls = []string{
		`mode: "rw"`, `"mode": "rw"`, `#"mode"#: "rw"`, `mode?: "rw"`, `mode!: "rw"`, `_mode: "rw"`, `#mode: "rw"`,
		`extra: 1`, `"extra": 1`, `let x = 1`, `@tag(x)`, `"x"`, `mode: "rw" @tag(x)`, `[string]: _`,
		`network: allow: ["*:1"]`, `user: "0:0"`, `env: ["A"]`, `unprotect: [".git"]`, `accept: ["rw-holds-project"]`,
		`servers: z: image: "x"`, `version: "v1"`, `if true {mode: "rw"}`, `for x in [] {}`, `...`, `mode :: "rw"`,
		`X=mode: "rw"`, `(mode): "rw"`, `"\(1)": "rw"`, `<<: {mode: rw}`, `<<: {network: {allow: ["h:1"]}}`,
		`"<<": {mode: "rw"}`, `"mode": "rw", "mode": "ro"`, `"a": {"command": ["x"]}`,
	}
	labelForms = []string{`"%s"`, `#"%s"#`, `"\u00%02x%s"`, `%s?`, `%s!`, `_%s`, `#%s`, `%s_`}
)

// mutate applies a few structured mutations to src, driven by r: it
// replaces string/number literals and inserts declarations after a line
// ending in '{' or ','.
func mutate(src string, r *rand.Rand) string {
	n := 1 + r.IntN(3)
	for range n {
		switch r.IntN(5) {
		case 4: // respell a label: quoted, raw, escaped, optional...
			labels := labelRe.FindAllStringSubmatchIndex(src, -1)
			if len(labels) == 0 {
				continue
			}
			m := labels[r.IntN(len(labels))]
			name := src[m[2]:m[3]]
			form := labelForms[r.IntN(len(labelForms))]
			var l string
			if strings.Contains(form, "u00") {
				l = fmt.Sprintf(form, name[0], name[1:])
			} else {
				l = fmt.Sprintf(form, name)
			}
			src = src[:m[2]] + l + src[m[3]:]
		case 0, 1: // replace a quoted string
			idx := allIndexes(src, `"`)
			if len(idx) < 2 {
				continue
			}
			i := r.IntN(len(idx) - 1)
			a, b := idx[i], idx[i+1]
			if a > 0 && src[a-1] == '\\' || b > 0 && src[b-1] == '\\' {
				continue
			}
			src = src[:a] + trickyStrings[r.IntN(len(trickyStrings))] + src[b+1:]
		case 2: // insert a declaration after '{'
			idx := allIndexes(src, "{")
			if len(idx) == 0 {
				continue
			}
			i := idx[r.IntN(len(idx))]
			src = src[:i+1] + trickyDecls[r.IntN(len(trickyDecls))] + ", " + src[i+1:]
		case 3: // duplicate a line
			lines := strings.Split(src, "\n")
			i := r.IntN(len(lines))
			lines = slices.Insert(lines, i, lines[i])
			src = strings.Join(lines, "\n")
		}
	}
	return src
}

var labelRe = regexp.MustCompile(`(?m)(?:^|[{,\s])([a-z][a-zA-Z0-9_]*):`)

func allIndexes(s, sub string) []int {
	var out []int
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + 1
	}
}

// FuzzPlainAgreesWithCUE: any text, in any of the three formats the fast
// path reads, loads the same through it as through CUE.
func FuzzPlainAgreesWithCUE(f *testing.F) {
	for name, src := range seedPolicies(f) {
		ext := slices.Index(fuzzExts, filepath.Ext(name))
		if ext < 0 {
			continue
		}
		f.Add(uint8(ext), string(src), uint64(0))
		f.Add(uint8(ext), string(src), uint64(len(name)+1))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, ext uint8, src string, seed uint64) {
		if len(src) > 1<<14 {
			return
		}
		if seed != 0 {
			src = mutate(src, rand.New(rand.NewPCG(seed, seed>>7)))
		}
		checkAgree(t, dir, "mcpolicy"+fuzzExts[int(ext)%len(fuzzExts)], []byte(src))
	})
}

// TestPlainAgreesOnSeeds runs checkAgree over the seed corpus and over a
// few thousand structured mutations of it, deterministically.
func TestPlainAgreesOnSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	dir := t.TempDir()
	seeds := seedPolicies(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range seeds {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		checkAgree(t, dir, strings.ReplaceAll(name, "/", "_"), seeds[name])
	}
	if testing.Short() {
		return
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		name := names[r.IntN(len(names))]
		src := mutate(string(seeds[name]), r)
		checkAgree(t, dir, fmt.Sprintf("m%d%s", i, filepath.Ext(name)), []byte(src))
		if t.Failed() && i > 0 && i%500 == 0 {
			break
		}
	}
}
