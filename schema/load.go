package schema

import (
	"bytes"
	_ "embed"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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

// The runtime baselines are Go data generated from the schema
// (internal/baseline/zbaselines.go): a build reads them without compiling
// CUE, and an emitter without importing the schema.
//
//go:generate env MCPOLICY_UPDATE=1 go test -run TestGeneratedBaselines .

// compileSchema compiles the part of the embedded schema that def needs:
// def and the definitions it refers to, directly or not. Compiling
// evaluates every declaration of a file, and the macOS baselines' list
// comprehensions are most of the schema's evaluation, which a policy
// never needs (nor a baseline the policy's definitions).
func compileSchema(ctx *cue.Context, def string) cue.Value {
	return ctx.CompileBytes(schemaPart(def), cue.Filename(schemaFile))
}

var schemaParts sync.Map // definition name -> []byte

// schemaPart is the embedded schema with every top-level declaration that
// def does not reach, and every comment, replaced by spaces, newlines
// kept: each position in it, which errors carry, is the same line and
// column as in the file. It reads the file as text, not with CUE's parser
// (which costs as much as compiling the part): a top-level declaration
// starts at the start of a line, the lines it continues on start with a
// space, a tab or a closing bracket, and it reaches the definitions whose
// names it holds. A test checks this against the syntax tree.
func schemaPart(def string) []byte {
	if src, ok := schemaParts.Load(def); ok {
		return src.([]byte)
	}
	decls := topDecls(schemaSource)
	keep := map[string]bool{def: true}
	for todo := []string{def}; len(todo) > 0; {
		name := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, d := range decls[name] {
			for _, ref := range defNames(schemaSource[d[0]:d[1]]) {
				if decls[ref] != nil && !keep[ref] {
					keep[ref] = true
					todo = append(todo, ref)
				}
			}
		}
	}
	src := append([]byte(nil), schemaSource...)
	for name, ds := range decls {
		if keep[name] {
			continue
		}
		for _, d := range ds {
			for i := d[0]; i < d[1]; i++ {
				if src[i] != '\n' {
					src[i] = ' '
				}
			}
		}
	}
	blankComments(src)
	actual, _ := schemaParts.LoadOrStore(def, src)
	return actual.([]byte)
}

// topDecls returns the byte ranges of the top-level definitions of a
// schema source, by name.
func topDecls(src []byte) map[string][][2]int {
	decls := map[string][][2]int{}
	name, start := "", 0
	end := func(at int) {
		if name != "" {
			decls[name] = append(decls[name], [2]int{start, at})
		}
		name = ""
	}
	for at := 0; at < len(src); {
		line := src[at:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i+1]
		}
		switch c := line[0]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '}' || c == ']' || c == ')':
			// the declaration goes on
		default:
			end(at)
			if c == '#' {
				if n, _, ok := bytes.Cut(line, []byte(":")); ok {
					name, start = string(n), at
				}
			}
		}
		at += len(line)
	}
	end(len(src))
	return decls
}

// blankComments replaces each comment of a schema source by spaces.
func blankComments(src []byte) {
	for i := 0; i < len(src); i++ {
		switch {
		case src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
			for ; i < len(src) && src[i] != '\n'; i++ {
				src[i] = ' '
			}
		case src[i] == '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		}
	}
}

// defNames returns the definition names (#Name) a piece of schema refers
// to, outside comments and strings.
func defNames(src []byte) []string {
	var names []string
	for i := 0; i < len(src); i++ {
		switch {
		case src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case src[i] == '"':
			for i++; i < len(src) && src[i] != '"'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case src[i] == '#':
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || j > i+1 && src[j] >= '0' && src[j] <= '9') {
				j++
			}
			if j > i+1 {
				names = append(names, string(src[i:j]))
			}
			i = j - 1
		}
	}
	return names
}

// Source returns the embedded CUE schema, for `mcpolicy schema` and docs.
func Source() []byte { return append([]byte(nil), schemaSource...) }

// Load reads, validates and decodes one policy file. root bounds Jsonnet
// imports. Invalid input yields Errors, each with file:line:col and field.
func Load(file, root string) (*Policy, error) {
	src, err := readPolicy(file)
	if err != nil {
		return nil, readError(file, err).Err()
	}
	return LoadBytes(file, src, root)
}

// LoadBytes is Load for content already in memory; file names the content in
// messages and decides its format by extension.
func LoadBytes(file string, src []byte, root string) (*Policy, error) {
	return loadBytes(file, src, root, throughGo)
}

// loadPath is how loadBytes reads a policy; the differential tests compare
// the three.
type loadPath int

const (
	throughCUE      loadPath = iota // CUE's evaluation and decode, for every policy
	throughPlainCUE                 // plain data decoded from its syntax, validated by CUE
	throughGo                       // ...checked by fitsPlain first, CUE only when it is not sure
)

// loadBytes is LoadBytes, through the given path.
func loadBytes(file string, src []byte, root string, through loadPath) (*Policy, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	src = trimBOM(src)
	if e := badText(file, src); e != nil {
		return nil, Errors{e}.Err()
	}
	if e := emptyPolicy(file, src); e != nil {
		return nil, Errors{e}.Err()
	}
	// The schema is compiled when CUE is needed, into the context the
	// policy's value is built in.
	var ctx *cue.Context
	var policyDef cue.Value
	schema := func() cue.Value {
		if ctx == nil {
			ctx = cuecontext.New()
			sch := compileSchema(ctx, "#Policy")
			if sch.Err() != nil {
				panic("internal error: embedded schema does not compile: " + sch.Err().Error())
			}
			policyDef = sch.LookupPath(cue.MakePath(cue.Def("#Policy")))
		}
		return policyDef
	}
	if through != throughCUE {
		if p, ok := loadPlain(file, src, schema, through == throughGo); ok {
			p.Dir = filepath.Dir(abs)
			return p, nil
		}
	}

	schema()
	data, syntax, errs := parseData(ctx, file, src, root)
	if errs != nil {
		return nil, errs.Err()
	}
	if e := rootKind(file, src, data); e != nil {
		return nil, Errors{e}.Err()
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

// loadPlain loads a policy file that is plain data (see decodePlain) and
// valid: fitsPlain says so (with check), or else its syntax is unified
// with the schema directly, one evaluation where building its value first
// and unifying that would be two. It is decoded from its syntax. ok is
// false for any other file, Jsonnet included, and for an invalid one,
// which the full path then reports.
func loadPlain(file string, src []byte, schema func() cue.Value, check bool) (p *Policy, ok bool) {
	p, decls, ok := parsePlain(file, src)
	if !ok {
		return nil, false
	}
	if check && fitsPlain(decls) {
		return p, true
	}
	return p, validPlain(schema(), decls)
}

// parsePlain parses a policy file and decodes it if it is plain data,
// returning its top-level declarations, not yet validated.
func parsePlain(file string, src []byte) (p *Policy, decls []ast.Decl, ok bool) {
	var syntax ast.Node
	switch strings.ToLower(filepath.Ext(file)) {
	case ".cue":
		f, err := parser.ParseFile(file, src)
		if err != nil {
			return nil, nil, false
		}
		syntax, decls = f, f.Decls
	case ".json":
		expr, err := cuejson.Extract(file, src)
		if err != nil {
			return nil, nil, false
		}
		syntax = expr
		if s, ok := expr.(*ast.StructLit); ok {
			decls = s.Elts
		}
	case ".yaml", ".yml":
		if len(yamlChecks(file, src)) > 0 {
			return nil, nil, false // the full path reports them
		}
		f, err := cueyaml.Extract(file, src)
		if err != nil {
			return nil, nil, false
		}
		syntax, decls = f, f.Decls
	default:
		return nil, nil, false
	}
	if tooNested(file, syntax) != nil {
		return nil, nil, false // CUE's evaluation of it is slow: the full path refuses it first
	}
	p, ok = decodePlain(file, syntax) // refuses imports and a server declared twice
	return p, decls, ok
}

// parallelFrom is the number of servers from which validPlain shares
// them between goroutines: each needs its own CUE context and schema.
const parallelFrom = 64

// batchSize is how many servers validPlain unifies with the schema at a
// time. Servers are independent of each other (servers: [string]:
// #Server), and a batch's evaluation is garbage once validated: small
// batches keep the heap small, which is most of the cost for a long list
// (500 servers of bench.WriteServers, one core, a fresh process: in one
// value 41 MB resident and 155 ms; in batches of 16, 25 MB and 105 ms;
// 8 to 16 measured best, 2026-12-01 on the 2-core VM).
const batchSize = 16

// validPlain reports whether a plain policy's top-level declarations fit
// the schema. Its syntax is unified with the schema directly: building its
// value first and unifying that would evaluate it twice (plain data holds
// no identifier to resolve in the schema's scope). A long list of servers
// is validated in batches (batchSize), shared between goroutines (from
// parallelFrom servers on), each validating against its own copy of the
// schema; the first batch goes with the rest of the file.
func validPlain(policyDef cue.Value, decls []ast.Decl) bool {
	var all, top, servers []ast.Decl
	var serversField *ast.Field
	for _, d := range decls {
		if _, pkg := d.(*ast.Package); pkg {
			continue
		}
		all = append(all, d)
		if f, ok := d.(*ast.Field); ok {
			if name, _, _ := labelName(f.Label); name == "servers" {
				if s, ok := f.Value.(*ast.StructLit); ok {
					serversField, servers = f, s.Elts
					continue
				}
			}
		}
		top = append(top, d)
	}
	if serversField == nil || len(servers) <= batchSize {
		return valid(policyDef, &ast.StructLit{Elts: all})
	}
	batches := (len(servers) + batchSize - 1) / batchSize
	batch := func(i int) *ast.StructLit {
		return &ast.StructLit{Elts: servers[i*batchSize : min(len(servers), (i+1)*batchSize)]}
	}
	serversOf := func(policyDef cue.Value) cue.Value {
		return policyDef.LookupPath(cue.MakePath(cue.Str("servers")))
	}
	var next atomic.Int64 // the next batch to validate
	next.Store(1)
	var bad atomic.Bool
	work := func(def cue.Value) {
		for !bad.Load() {
			i := int(next.Add(1) - 1)
			if i >= batches {
				return
			}
			if !valid(def, batch(i)) {
				bad.Store(true)
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(servers)/parallelFrom) - 1 {
		wg.Go(func() {
			work(serversOf(compileSchema(cuecontext.New(), "#Policy").LookupPath(cue.MakePath(cue.Def("#Policy")))))
		})
	}
	if !valid(policyDef, &ast.StructLit{Elts: append(top, &ast.Field{Label: serversField.Label, Value: batch(0)})}) {
		bad.Store(true)
	}
	work(serversOf(policyDef))
	wg.Wait()
	return !bad.Load()
}

func valid(def cue.Value, x ast.Expr) bool {
	return def.FillPath(cue.Path{}, x).Validate(cue.Concrete(true)) == nil
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
		if !hasData(f) {
			return cue.Value{}, nil, Errors{emptyError(file)}
		}
		if e := tooNested(file, f); e != nil {
			return cue.Value{}, nil, Errors{e}
		}
		for imp := range f.ImportSpecs() {
			return cue.Value{}, nil, Errors{{Pos: posOf(imp.Pos(), file), Msg: "imports are not supported in policy files",
				Hint: "keep a policy self-contained; use Jsonnet or several files under mcpolicy.d/ to share parts"}}
		}
		// @extern(embed) lets @embed(file=...) read other files, which a
		// server may write. CUE refuses it outside a module today (a file
		// built alone is in none); a policy reads no other file whatever
		// CUE's rules become.
		for _, d := range f.Decls {
			if a, ok := d.(*ast.Attribute); ok {
				if name, _ := a.Split(); name == "extern" {
					return cue.Value{}, nil, Errors{{Pos: posOf(a.Pos(), file), Msg: "@extern attributes are not supported in policy files: @embed would read files a server may be able to write",
						Hint: "write the values in the policy itself; use Jsonnet with libraries under mcpolicy.d/ to share parts"}}
				}
			}
		}
		v := ctx.BuildFile(f)
		if v.Err() != nil {
			return v, nil, conflictHints(fromCUEErrors(v.Err(), file, "", ""))
		}
		return v, f, nil
	case ".json":
		expr, err := cuejson.Extract(file, src)
		if err != nil {
			return cue.Value{}, nil, fromCUEErrors(err, file, "JSON syntax error", "")
		}
		if e := tooNested(file, expr); e != nil {
			return cue.Value{}, nil, Errors{e}
		}
		if errs := duplicateKeys(file, src, expr); len(errs) > 0 {
			return cue.Value{}, nil, errs
		}
		v := ctx.BuildExpr(expr)
		return v, expr, nil
	case ".yaml", ".yml":
		if errs := yamlChecks(file, src); len(errs) > 0 {
			return cue.Value{}, nil, errs // before CUE's reader, which expands aliases
		}
		f, err := cueyaml.Extract(file, src)
		if err != nil {
			return cue.Value{}, nil, fromCUEErrors(err, file, "YAML error", "")
		}
		if e := tooNested(file, f); e != nil {
			return cue.Value{}, nil, Errors{e}
		}
		if errs := duplicateKeys(file, src, f); len(errs) > 0 {
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
		if e := tooNested(file, expr); e != nil {
			e.Pos = Pos{File: file} // its position is in the rendered JSON
			e.Msg = "Jsonnet error: the policy renders to " + e.Msg
			e.Hint = "a policy nests a few levels: look for a recursion that nests a value in itself"
			return cue.Value{}, nil, Errors{e}
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

// conflictHints adds a hint to CUE's "conflicting values" errors: a field
// declared twice with two values, which CUE unifies.
func conflictHints(errs Errors) Errors {
	for _, e := range errs {
		if strings.Contains(e.Msg, "conflicting values") && e.Hint == "" {
			e.Hint = conflictHint
		}
	}
	return errs
}

const conflictHint = "the field is given two different values: CUE unifies every declaration of a field, so declare it once"

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
