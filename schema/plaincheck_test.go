package schema

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// plainBase is a valid plain server every violation below starts from,
// field by field.
var plainBase = [][2]string{
	{"command", `["x"]`}, {"image", `"x:1"`}, {"workdir", `"/w"`}, {"user", `"0:0"`},
	{"mounts", `[{source: "s", target: "/t", mode: "rw"}]`}, {"scratch", `{size: "1m"}`},
	{"env", `["A"]`}, {"network", `{allow: ["h:1"]}`}, {"unprotect", `[".git"]`},
	{"limits", `{memory: "1g", pids: 3, cpus: 0.5}`}, {"waive", `[{rule: "R", reason: "r", expires: "2030-01-01"}]`},
	{"backends", `["docker"]`}, {"runtime", `"node"`}, {"accept", `["rw-holds-project"]`},
	{"packs", `["go", "npx"]`},
}

// plainServer is a policy of one server: plainBase with field set to
// value ("" leaves the field out, a field plainBase lacks is added).
func plainServer(field, value string) string {
	var fs []string
	set := false
	for _, f := range plainBase {
		if f[0] == field {
			f[1], set = value, true
		}
		if f[1] != "" {
			fs = append(fs, f[0]+": "+f[1])
		}
	}
	if !set && field != "" {
		fs = append(fs, field+": "+value)
	}
	return "version: \"v1\"\nservers: a: {" + strings.Join(fs, ", ") + "}\n"
}

// plainViolations are plain policies that each break one constraint of
// the schema, of every kind fitsPlain reads: CUE refuses each, and so must
// fitsPlain (it is then not sure, and CUE reports the error).
var plainViolations = map[string]string{
	"version-const":      strings.Replace(plainServer("", ""), `"v1"`, `"v2"`, 1),
	"version-absent":     strings.Replace(plainServer("", ""), `version: "v1"`, ``, 1),
	"top-unknown":        plainServer("", "") + "sevrers: {}\n",
	"server-kind":        `version: "v1", servers: a: "x"`,
	"field-unknown":      plainServer("imgae", `"x"`),
	"description-kind":   plainServer("description", `1`),
	"image-dash":         plainServer("image", `"-x"`),
	"image-empty":        plainServer("image", `""`),
	"image-space":        plainServer("image", `"a b"`),
	"command-empty":      plainServer("command", `[]`),
	"command-elem":       plainServer("command", `[1]`),
	"workdir-relative":   plainServer("workdir", `"w"`),
	"user-root":          plainServer("user", `"root"`),
	"user-long":          plainServer("user", `"12345678901:0"`),
	"mount-source-empty": plainServer("mounts", `[{source: "", target: "/t"}]`),
	"mount-source-gone":  plainServer("mounts", `[{target: "/t"}]`),
	"mount-target":       plainServer("mounts", `[{source: "s", target: "t"}]`),
	"mount-target-gone":  plainServer("mounts", `[{source: "s"}]`),
	"mount-mode":         plainServer("mounts", `[{source: "s", target: "/t", mode: "rx"}]`),
	"mount-extra":        plainServer("mounts", `[{source: "s", target: "/t", uid: "0"}]`),
	"scratch-size-gone":  plainServer("scratch", `{target: "/t"}`),
	"scratch-size":       plainServer("scratch", `{size: "0m"}`),
	"scratch-target":     plainServer("scratch", `{size: "1m", target: "tmp"}`),
	"env-name":           plainServer("env", `["1A"]`),
	"env-value":          plainServer("env", `["A=b"]`),
	"network-all":        plainServer("network", `"all"`),
	"network-empty":      plainServer("network", `{allow: []}`),
	"network-allow-gone": plainServer("network", `{}`),
	"network-no-port":    plainServer("network", `{allow: ["h"]}`),
	"unprotect-name":     plainServer("unprotect", `["src"]`),
	"unprotect-prefix":   plainServer("unprotect", `[".gitx"]`),
	"pids-zero":          plainServer("limits", `{pids: 0}`),
	"pids-over":          plainServer("limits", `{pids: 1000001}`),
	"pids-float":         plainServer("limits", `{pids: 2.0}`),
	"cpus-zero":          plainServer("limits", `{cpus: 0.0}`),
	"cpus-over":          plainServer("limits", `{cpus: 1025}`),
	"cpus-over-by-ulp":   plainServer("limits", `{cpus: 1024.0000000000001}`),
	"memory":             plainServer("limits", `{memory: "1t"}`),
	"waive-rule":         plainServer("waive", `[{rule: "r", reason: "x"}]`),
	"waive-reason":       plainServer("waive", `[{rule: "R", reason: "   "}]`),
	"waive-reason-gone":  plainServer("waive", `[{rule: "R"}]`),
	"waive-expires":      plainServer("waive", `[{rule: "R", reason: "x", expires: "2030-1-1"}]`),
	"backends-empty":     plainServer("backends", `[]`),
	"backends-name":      plainServer("backends", `["dockr"]`),
	"runtime":            plainServer("runtime", `"java"`),
	"accept":             plainServer("accept", `["landlock"]`),
	"packs":              plainServer("packs", `["node"]`),
	"packs-kind":         plainServer("packs", `"go"`),
	"tools-allow-gone":   plainServer("tools", `{deny: ["x"]}`),
	"tools-allow-empty":  plainServer("tools", `{allow: []}`),
	"tools-glob":         plainServer("tools", `{allow: ["a b"]}`),
	"tools-extra":        plainServer("tools", `{allow: ["a"], hide: ["b"]}`),
	"tools-on-change":    plainServer("tools", `{allow: ["a"], onPinChange: "warn"}`),
	"tools-pin-kind":     plainServer("tools", `{allow: ["a"], pin: "yes"}`),
	"tools-args-tool":    plainServer("tools", `{allow: ["a"], args: "a b": p: {under: ["/w"]}}`),
	"tools-args-name":    plainServer("tools", `{allow: ["a"], args: a: "": {under: ["/w"]}}`),
	"tools-under":        plainServer("tools", `{allow: ["a"], args: a: p: {under: ["w"]}}`),
	"tools-under-empty":  plainServer("tools", `{allow: ["a"], args: a: p: {under: []}}`),
	"tools-max-zero":     plainServer("tools", `{allow: ["a"], args: a: p: {maxBytes: 0}}`),
	"tools-enum-empty":   plainServer("tools", `{allow: ["a"], args: a: p: {enum: []}}`),
	"tools-rule-extra":   plainServer("tools", `{allow: ["a"], args: a: p: {glob: "x"}}`),
	"cred-name":          plainServer("credentials", `{"A-B": {to: ["h:1"]}}`),
	"cred-to-gone":       plainServer("credentials", `{A: {}}`),
	"cred-to-empty":      plainServer("credentials", `{A: {to: []}}`),
	"cred-wildcard":      plainServer("credentials", `{A: {to: ["*.h:1"]}}`),
	"cred-no-port":       plainServer("credentials", `{A: {to: ["h"]}}`),
	"cred-command-empty": plainServer("credentials", `{A: {to: ["h:1"], from: command: []}}`),
	"cred-command-arg":   plainServer("credentials", `{A: {to: ["h:1"], from: command: ["op", ""]}}`),
	"cred-from-env":      plainServer("credentials", `{A: {to: ["h:1"], from: env: "1A"}}`),
	"cred-from-extra":    plainServer("credentials", `{A: {to: ["h:1"], from: file: "x"}}`),
	"cred-header":        plainServer("credentials", `{A: {to: ["h:1"], as: header: "X Key"}}`),
	"cred-format":        plainServer("credentials", `{A: {to: ["h:1"], as: format: "Bearer"}}`),
	"cred-query":         plainServer("credentials", `{A: {to: ["h:1"], as: query: "a&b"}}`),
	"cred-extra":         plainServer("credentials", `{A: {to: ["h:1"], via: "x"}}`),
}

// TestFitsPlain: fitsPlain accepts the base server and every valid plain
// policy of the seed corpus (so they skip CUE), and refuses each violation,
// which CUE refuses too and reports the same through every path.
func TestFitsPlain(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcpolicy.cue")
	base := plainServer("", "")
	if _, decls, ok := parsePlain(file, []byte(base)); !ok || !fitsPlain(decls) {
		t.Fatalf("fitsPlain refuses the base server: %s", base)
	}
	for _, name := range slices.Sorted(mapKeys(plainViolations)) {
		src := []byte(plainViolations[name])
		if _, err := loadBytes(file, src, dir, throughCUE); err == nil {
			t.Errorf("%s: CUE accepts it", name)
		}
		if _, decls, _ := parsePlain(file, src); decls == nil {
			t.Errorf("%s: does not parse", name)
		} else if fitsPlain(decls) {
			t.Errorf("%s: fitsPlain accepts it", name)
		}
		checkAgree(t, dir, name+".cue", src)
	}
	fit := 0
	for name, src := range seedPolicies(t) {
		f := filepath.Join(dir, "seed"+filepath.Ext(name))
		if _, plain := loadPlain(f, src, partDef, false); !plain {
			continue
		}
		if _, decls, ok := parsePlain(f, src); !ok || !fitsPlain(decls) {
			t.Errorf("%s: valid plain data, and fitsPlain is not sure of it", name)
		}
		fit++
	}
	if fit < 30 {
		t.Errorf("only %d seed policies are valid plain data", fit)
	}
}

// TestFitsPlainCheckCanFail: each part of the plain check, left out,
// lets the differential corpus (violations, seeds and their mutations)
// find a policy CUE refuses and the weakened check accepts: the tests
// that hold fitsPlain to CUE can fail.
func TestFitsPlainCheckCanFail(t *testing.T) {
	weakenings := map[string]func(*plainAlt){
		"no patterns":    func(a *plainAlt) { a.Match, a.NoMatch = nil, nil },
		"no constants":   func(a *plainAlt) { a.Const = nil },
		"no exclusions":  func(a *plainAlt) { a.Not = nil },
		"no bounds":      func(a *plainAlt) { a.Bounds = nil },
		"no min length":  func(a *plainAlt) { a.MinLen = 0 },
		"open structs":   func(a *plainAlt) { openStruct(a) },
		"all optional":   func(a *plainAlt) { allOptional(a) },
		"ints as floats": func(a *plainAlt) { intAsNumber(a) },
	}
	dir := t.TempDir()
	type sample struct {
		name string
		src  []byte
	}
	var corpus []sample
	for _, name := range slices.Sorted(mapKeys(plainViolations)) {
		corpus = append(corpus, sample{name, []byte(plainViolations[name])})
	}
	seeds := seedPolicies(t)
	names := slices.Sorted(mapKeys(seeds))
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		name := names[r.IntN(len(names))]
		corpus = append(corpus, sample{fmt.Sprintf("m%d-%s", i, name), []byte(mutate(string(seeds[name]), r))})
	}
	for _, what := range slices.Sorted(mapKeys(weakenings)) {
		weak := weakened(*plainPolicyType, weakenings[what])
		caught := ""
		for _, s := range corpus {
			file := filepath.Join(dir, "mcpolicy"+cmpExt(s.name))
			_, decls, _ := parsePlain(file, s.src) // decodePlain's own refusals aside
			if decls == nil || !weak.fitsStruct(decls) {
				continue
			}
			if _, err := loadBytes(file, s.src, dir, throughCUE); err != nil {
				caught = s.name
				break
			}
		}
		if caught == "" {
			t.Errorf("%s: no policy of the corpus tells the weakened check from CUE", what)
		} else {
			t.Logf("%s: caught by %s", what, caught)
		}
	}
}

func cmpExt(name string) string {
	if ext := filepath.Ext(name); slices.Contains(fuzzExts, ext) {
		return ext
	}
	return ".cue"
}

// weakened is a deep copy of t with f applied to every alternative.
func weakened(t plainType, f func(*plainAlt)) *plainType {
	out := plainType{Default: t.Default}
	for _, a := range t.Alts {
		a.Const, a.Match, a.NoMatch, a.Not, a.Bounds = slices.Clone(a.Const), slices.Clone(a.Match), slices.Clone(a.NoMatch), slices.Clone(a.Not), slices.Clone(a.Bounds)
		if a.Elem != nil {
			a.Elem = weakened(*a.Elem, f)
		}
		if a.Pattern != nil {
			a.Pattern = weakened(*a.Pattern, f)
		}
		fields := make([]plainField, len(a.Fields))
		for i, fd := range a.Fields {
			fd.Type = *weakened(fd.Type, f)
			fields[i] = fd
		}
		a.Fields = fields
		f(&a)
		out.Alts = append(out.Alts, a)
	}
	return &out
}

// openStruct lets a closed struct take any other field (a pattern that
// any plain value fits; it also applies to the declared fields).
func openStruct(a *plainAlt) {
	if a.Kind == "struct" && a.Pattern == nil {
		anything := &plainType{}
		anything.Alts = []plainAlt{{Kind: "string"}, {Kind: "number"}, {Kind: "list", Elem: anything}, {Kind: "struct", Pattern: anything}}
		a.Pattern = anything
	}
}

func allOptional(a *plainAlt) {
	for i := range a.Fields {
		a.Fields[i].Optional, a.Fields[i].Required = true, false
	}
}

func intAsNumber(a *plainAlt) {
	if a.Kind == "int" {
		a.Kind = "number"
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
