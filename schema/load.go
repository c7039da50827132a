package schema

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	cuejson "cuelang.org/go/encoding/json"
	cueyaml "cuelang.org/go/encoding/yaml"
)

//go:embed policy.cue
var schemaSource []byte

// schemaFile is the name the embedded schema carries in CUE positions; it
// tells schema positions apart from positions in the user's file.
const schemaFile = "mcpolicy/schema/policy.cue"

// Version is the only schema version this build understands.
const Version = "v1"

// Extensions are the policy file formats Load accepts.
var Extensions = []string{".cue", ".json", ".yaml", ".yml", ".jsonnet"}

var baselines = sync.OnceValue(func() map[string][]string {
	v := cuecontext.New().CompileBytes(schemaSource, cue.Filename(schemaFile)).LookupPath(cue.MakePath(cue.Def("#Baselines")))
	var m map[string][]string
	if err := v.Decode(&m); err != nil {
		panic("internal error: schema #Baselines: " + err.Error())
	}
	return m
})

// Baseline returns the read-only host paths of a named runtime baseline.
func Baseline(name string) ([]string, error) {
	paths, ok := baselines()[name]
	if !ok {
		return nil, fmt.Errorf("unknown runtime baseline %q", name)
	}
	return append([]string(nil), paths...), nil
}

// SeatbeltRule is one rule of a macOS runtime baseline (#SeatbeltRule).
type SeatbeltRule struct {
	Allow        []string         `json:"allow"`
	Subpath      []string         `json:"subpath"`
	Literal      []string         `json:"literal"`
	GlobalName   []string         `json:"globalName"`
	Sysctl       []SeatbeltSysctl `json:"sysctl"`
	IPCNameRegex []string         `json:"ipcNameRegex"`
	Target       string           `json:"target"`
	Why          string           `json:"why"`
	Peers        string           `json:"peers"`
}

// SeatbeltSysctl is one group of sysctl names a runtime reads (#SeatbeltSysctl).
type SeatbeltSysctl struct {
	Name   []string `json:"name"`
	Prefix []string `json:"prefix"`
	Why    string   `json:"why"`
}

// decodeDef decodes one definition of the embedded schema into v.
func decodeDef(def string, v any) {
	d := cuecontext.New().CompileBytes(schemaSource, cue.Filename(schemaFile)).LookupPath(cue.MakePath(cue.Def(def)))
	if err := d.Decode(v); err != nil {
		panic("internal error: schema " + def + ": " + err.Error())
	}
}

var seatbeltBaselines = sync.OnceValue(func() map[string][]SeatbeltRule {
	var m map[string][]SeatbeltRule
	decodeDef("#SeatbeltBaselines", &m)
	return m
})

var seatbeltEgress = sync.OnceValue(func() []SeatbeltRule {
	var rs []SeatbeltRule
	decodeDef("#SeatbeltEgress", &rs)
	return rs
})

// SeatbeltBaseline returns the rules of a named macOS runtime baseline.
func SeatbeltBaseline(name string) ([]SeatbeltRule, error) {
	rules, ok := seatbeltBaselines()[name]
	if !ok {
		return nil, fmt.Errorf("unknown runtime baseline %q", name)
	}
	return rules, nil
}

// SeatbeltEgress returns the rules a seatbelt profile adds for a server
// with an egress allowlist (#SeatbeltEgress).
func SeatbeltEgress() []SeatbeltRule { return seatbeltEgress() }

// Source returns the embedded CUE schema, for `mcpolicy schema` and docs.
func Source() []byte { return append([]byte(nil), schemaSource...) }

// Load reads, validates and decodes one policy file. root bounds Jsonnet
// imports. Invalid input yields Errors, each with file:line:col and field.
func Load(file, root string) (*Policy, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return LoadBytes(file, src, root)
}

// LoadBytes is Load for content already in memory; file names the content in
// messages and decides its format by extension.
func LoadBytes(file string, src []byte, root string) (*Policy, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	ctx := cuecontext.New()
	sch := ctx.CompileBytes(schemaSource, cue.Filename(schemaFile))
	if sch.Err() != nil {
		panic("internal error: embedded schema does not compile: " + sch.Err().Error())
	}
	policyDef := sch.LookupPath(cue.MakePath(cue.Def("#Policy")))

	data, syntax, errs := parseData(ctx, file, src, root)
	if errs != nil {
		return nil, errs.Err()
	}
	if errs := duplicateServers(file, syntax); len(errs) > 0 {
		return nil, errs.Err()
	}
	var locate func([]string) (Pos, bool)
	if isJsonnet(file) {
		locate = jsonnetLocator(file, src)
	}
	unified := policyDef.Unify(data)
	if err := unified.Validate(cue.Concrete(true)); err != nil {
		return nil, convertCUEError(err, file, data, policyDef, locate).Err()
	}
	p, err := decode(file, unified, data, locate)
	if err != nil {
		return nil, err
	}
	p.Dir = filepath.Dir(abs)
	return p, nil
}

// parseData turns the file into a CUE value and the syntax tree used for
// checks CUE itself would not make (a server declared twice unifies silently).
func parseData(ctx *cue.Context, file string, src []byte, root string) (cue.Value, ast.Node, Errors) {
	ext := strings.ToLower(filepath.Ext(file))
	switch ext {
	case ".cue":
		f, err := parser.ParseFile(file, src, parser.ParseComments)
		if err != nil {
			return cue.Value{}, nil, fromCUEErrors(err, file, "CUE syntax error", "")
		}
		for imp := range f.ImportSpecs() {
			return cue.Value{}, nil, Errors{{Pos: posOf(imp.Pos(), file), Msg: "imports are not supported in policy files",
				Hint: "keep a policy self-contained; use Jsonnet or several files under mcpolicy.d/ to share parts"}}
		}
		v := ctx.BuildFile(f)
		if v.Err() != nil {
			return v, nil, fromCUEErrors(v.Err(), file, "", "")
		}
		return v, f, nil
	case ".json":
		expr, err := cuejson.Extract(file, src)
		if err != nil {
			return cue.Value{}, nil, fromCUEErrors(err, file, "JSON syntax error", "")
		}
		v := ctx.BuildExpr(expr)
		return v, expr, nil
	case ".yaml", ".yml":
		f, err := cueyaml.Extract(file, src)
		if err != nil {
			return cue.Value{}, nil, fromCUEErrors(err, file, "YAML error", "")
		}
		if errs := duplicateServers(file, f); len(errs) > 0 {
			return cue.Value{}, nil, errs // before building: CUE would report a bare conflict
		}
		v := ctx.BuildFile(f)
		if v.Err() != nil {
			return v, nil, fromCUEErrors(v.Err(), file, "", "")
		}
		return v, f, nil
	case ".jsonnet", ".libsonnet": // see isJsonnet
		out, errs := evalJsonnet(file, src, root)
		if errs != nil {
			return cue.Value{}, nil, errs
		}
		// CUE positions point into the rendered JSON; convertCUEError maps
		// them back to the Jsonnet source by field path.
		expr, err := cuejson.Extract(renderedName(file), out)
		if err != nil {
			return cue.Value{}, nil, fromCUEErrors(err, file, "", "")
		}
		return ctx.BuildExpr(expr), expr, nil
	}
	return cue.Value{}, nil, Errors{{Pos: Pos{File: file}, Msg: fmt.Sprintf("unsupported policy format %q", ext),
		Hint: "use one of " + strings.Join(Extensions, ", ")}}
}

func isJsonnet(file string) bool {
	ext := strings.ToLower(filepath.Ext(file))
	return ext == ".jsonnet" || ext == ".libsonnet"
}

// renderedName names the JSON a Jsonnet file renders to, in CUE positions.
func renderedName(file string) string { return file + " (rendered)" }

// duplicateServers reports a server name declared more than once. CUE would
// merge the two declarations; a reviewer must see every grant in one place.
func duplicateServers(file string, n ast.Node) Errors {
	var decls []ast.Decl
	switch n := n.(type) {
	case *ast.File:
		decls = n.Decls
	case *ast.StructLit:
		decls = n.Elts
	}
	seen := map[string]token.Pos{}
	var errs Errors
	for _, d := range decls {
		f, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		if name, _, _ := ast.LabelName(f.Label); name != "servers" {
			continue
		}
		s, ok := f.Value.(*ast.StructLit)
		if !ok {
			continue
		}
		for _, e := range s.Elts {
			sf, ok := e.(*ast.Field)
			if !ok {
				continue
			}
			name, _, err := ast.LabelName(sf.Label)
			if err != nil {
				continue
			}
			if first, dup := seen[name]; dup {
				errs = append(errs, DuplicateServer(posOf(sf.Pos(), file), name, posOf(first, file)))
				continue
			}
			seen[name] = sf.Pos()
		}
	}
	return errs
}

// DuplicateServer is the error for a server name declared twice, in one
// file or across the files of a project.
func DuplicateServer(at Pos, name string, first Pos) *Error {
	return &Error{Pos: at, Path: FieldPath("servers", name), Msg: "server declared twice (first at " + first.String() + ")",
		Hint: "declare each server once, so a reviewer sees all of its grants together"}
}

// FieldPath renders a path the way errors show it: servers."code-index".env.
// Labels that are not identifiers are quoted.
func FieldPath(labels ...string) string {
	for i, l := range labels {
		labels[i] = quoteLabel(l)
	}
	return strings.Join(labels, ".")
}

// Compiled on first use: every mcpolicy process pays package init, few use it.
var jsonnetPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`([^\s:]+\.(?:jsonnet|libsonnet)):(\d+):(\d+)`) })

// fromCUEErrors converts syntax and build errors, which have no field path.
func fromCUEErrors(err error, file, prefix, hint string) Errors {
	var errs Errors
	for _, e := range cueerrors.Errors(err) {
		pos := Pos{File: file}
		for _, p := range cueerrors.Positions(e) {
			if p.IsValid() {
				pos = posOf(p, file)
				break
			}
		}
		msg := e.Error()
		// The JSON decoder prefixes its cause; the YAML one puts "file:line:"
		// in the text and gives no position.
		if i := strings.Index(msg, `": `); strings.HasPrefix(msg, "invalid JSON for file") && i > 0 {
			msg = msg[i+3:]
		}
		if m := textPos().FindStringSubmatch(msg); m != nil && pos.Line == 0 {
			line, _ := strconv.Atoi(m[2])
			pos, msg = Pos{File: m[1], Line: line}, m[3]
		}
		if prefix != "" {
			msg = prefix + ": " + msg
		}
		errs = append(errs, &Error{Pos: pos, Msg: msg, Hint: hint})
	}
	if len(errs) == 0 {
		errs = Errors{{Pos: Pos{File: file}, Msg: err.Error(), Hint: hint}}
	}
	return errs
}

// Compiled on first use: every mcpolicy process pays package init, few use it.
var textPos = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\S+?):(\d+): (.*)$`) })

func posOf(p token.Pos, fallback string) Pos {
	if !p.IsValid() {
		return Pos{File: fallback}
	}
	name := p.Filename()
	if name == "" {
		name = fallback
	}
	return Pos{File: name, Line: p.Line(), Col: p.Column()}
}

// quoteLabel writes a label the way CUE paths do: bare when it is an
// identifier, quoted otherwise.
func quoteLabel(s string) string {
	if ast.IsValidIdent(s) && !strings.HasPrefix(s, "#") && !strings.HasPrefix(s, "_") {
		return s
	}
	return strconv.Quote(s)
}
