package schema

import (
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/token"
	"golang.org/x/text/unicode/norm"
)

// The schema's defaults, for decodePlain. A test keeps them equal to the
// defaults policy.cue declares.
const (
	defaultUser          = "1000:1000"
	defaultNetwork       = "none"
	defaultRuntime       = "system"
	defaultMountMode     = "ro"
	defaultScratchTarget = "/tmp"
	defaultOnPinChange   = "hide"
)

// decodePlain is decode for a policy file that is plain data, read from its
// syntax tree: every struct a literal whose fields have literal labels,
// each declared once, and every value a string, list, struct or decimal
// number literal. The file must have been validated against the schema.
// For such a file the values are the ones CUE computes (plus the schema's
// defaults) and the positions the ones CUE reports, without a CUE
// operation per field, each of which costs microseconds. ok is false for
// anything else (references, comprehensions, a field declared twice...):
// decode reads those.
func decodePlain(file string, syntax ast.Node) (p *Policy, ok bool) {
	var top []ast.Decl
	switch n := syntax.(type) {
	case *ast.File:
		top = n.Decls
	case *ast.StructLit:
		top = n.Elts
	default:
		return nil, false
	}
	fields, names, ok := plainFields(top)
	if !ok {
		return nil, false
	}
	d := plainDecoder{file: file}
	p = &Policy{File: file}
	for _, name := range names {
		switch name {
		case "version":
			p.Version = d.str(fields[name].Value)
		case "servers":
			servers, order, ok := plainFields(structElts(fields[name].Value))
			if !ok {
				return nil, false
			}
			for _, name := range order {
				s, ok := d.server(name, servers[name])
				if !ok {
					return nil, false
				}
				p.Servers = append(p.Servers, s)
			}
		default:
			return nil, false
		}
	}
	if d.bad {
		return nil, false
	}
	return p, true
}

// plainFields returns the fields of a struct literal by name, and their
// names in order; ok is false unless each is a regular field with a
// literal label, declared once.
func plainFields(decls []ast.Decl) (fields map[string]*ast.Field, names []string, ok bool) {
	if decls == nil {
		return nil, nil, false
	}
	fields = map[string]*ast.Field{}
	for _, d := range decls {
		switch d := d.(type) {
		case *ast.Package, *ast.CommentGroup:
			continue
		case *ast.Field:
			if d.Constraint != token.ILLEGAL || d.Alias != nil {
				return nil, nil, false
			}
			name, ident, ok := labelName(d.Label)
			if !ok || ident && (strings.HasPrefix(name, "#") || strings.HasPrefix(name, "_")) {
				return nil, nil, false
			}
			if _, dup := fields[name]; dup {
				return nil, nil, false
			}
			fields[name] = d
			names = append(names, name)
		default:
			return nil, nil, false
		}
	}
	return fields, names, true
}

// labelName is a field's name as CUE's compiler reads its label: an
// identifier as written, a string unquoted and in Unicode normal form C
// ("e\u0301" and "é" are one field, as are "\u212a" and K). ident tells
// the two apart; ok is false for any other label.
func labelName(l ast.Label) (name string, ident, ok bool) {
	switch l := l.(type) {
	case *ast.Ident:
		return l.Name, true, true
	case *ast.BasicLit:
		s, ok := unquoteString(l)
		return norm.NFC.String(s), false, ok
	}
	return "", false, false
}

// structElts returns a struct literal's declarations, nil for anything else.
func structElts(e ast.Expr) []ast.Decl {
	if s, ok := e.(*ast.StructLit); ok {
		if s.Elts == nil {
			return []ast.Decl{}
		}
		return s.Elts
	}
	return nil
}

func unquoteString(l *ast.BasicLit) (string, bool) {
	if l.Kind != token.STRING || !strings.HasPrefix(strings.TrimLeft(l.Value, "#"), `"`) {
		return "", false // bytes, or not a string
	}
	s, err := literal.Unquote(l.Value)
	return s, err == nil
}

// plainDecoder reads values; bad is set when one is not plain.
type plainDecoder struct {
	file string
	bad  bool
}

func (d *plainDecoder) pos(n ast.Node) Pos {
	if n == nil {
		return Pos{File: d.file}
	}
	return posOf(n.Pos(), d.file)
}

func (d *plainDecoder) str(e ast.Expr) string {
	if l, ok := e.(*ast.BasicLit); ok {
		if s, ok := unquoteString(l); ok {
			return s
		}
	}
	d.bad = true
	return ""
}

// list returns a list literal's elements.
func (d *plainDecoder) list(e ast.Expr) []ast.Expr {
	l, ok := e.(*ast.ListLit)
	if !ok {
		d.bad = true
		return nil
	}
	for _, x := range l.Elts {
		switch x.(type) {
		case *ast.Ellipsis, *ast.Comprehension:
			d.bad = true
			return nil
		}
	}
	return l.Elts
}

func (d *plainDecoder) strs(e ast.Expr) []string {
	elts := d.list(e)
	out := make([]string, len(elts))
	for i, x := range elts {
		out[i] = d.str(x)
	}
	return out
}

func (d *plainDecoder) fields(e ast.Expr, allowed ...string) map[string]*ast.Field {
	fields, _, ok := plainFields(structElts(e))
	if !ok {
		d.bad = true
		return nil
	}
	for name := range fields {
		if !slices.Contains(allowed, name) {
			d.bad = true // CUE rejects it, but decode is not the place to say so
		}
	}
	return fields
}

// decimal reports whether s is digits, with a fraction if frac: CUE's
// other number forms (1K, 0x10, 1_000, 1e3, 010) are left to decode.
func decimal(s string, frac bool) bool {
	whole, fraction, dot := strings.Cut(s, ".")
	if dot && (!frac || !digits(fraction)) {
		return false
	}
	return digits(whole) && (whole == "0" || whole[0] != '0') && len(s) <= 18
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func (d *plainDecoder) int(e ast.Expr) int64 {
	if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.INT && decimal(l.Value, false) {
		n, err := strconv.ParseInt(l.Value, 10, 64)
		if err == nil {
			return n
		}
	}
	d.bad = true
	return 0
}

func (d *plainDecoder) float(e ast.Expr) float64 {
	if l, ok := e.(*ast.BasicLit); ok && (l.Kind == token.INT || l.Kind == token.FLOAT) && decimal(l.Value, true) {
		f, err := strconv.ParseFloat(l.Value, 64)
		if err == nil {
			return f
		}
	}
	d.bad = true
	return 0
}

func (d *plainDecoder) bool(e ast.Expr) bool {
	if l, ok := e.(*ast.BasicLit); ok && (l.Kind == token.TRUE || l.Kind == token.FALSE) {
		return l.Kind == token.TRUE
	}
	d.bad = true
	return false
}

// value returns a field's value, nil when it is absent.
func value(fields map[string]*ast.Field, name string) ast.Expr {
	if f := fields[name]; f != nil {
		return f.Value
	}
	return nil
}

// fieldPos is the position CUE reports for a field: its label's; a file
// position without a line when it is absent.
func (d *plainDecoder) fieldPos(fields map[string]*ast.Field, name string) Pos {
	if f := fields[name]; f != nil {
		return d.pos(f)
	}
	return Pos{File: d.file}
}

// strOr returns a string field, or def when it is absent.
func (d *plainDecoder) strOr(fields map[string]*ast.Field, name, def string) string {
	if v := value(fields, name); v != nil {
		return d.str(v)
	}
	return def
}

func (d *plainDecoder) server(name string, f *ast.Field) (Server, bool) {
	fs := d.fields(f.Value, "description", "image", "command", "workdir", "user", "mounts", "scratch", "proc", "env",
		"setenv", "network", "unprotect", "limits", "waive", "backends", "runtime", "accept", "packs", "tools", "credentials")
	if d.bad {
		return Server{}, false
	}
	s := Server{
		Name: name, Pos: d.pos(f),
		Description: d.strOr(fs, "description", ""), Image: d.strOr(fs, "image", ""),
		Workdir: d.strOr(fs, "workdir", ""), User: d.strOr(fs, "user", defaultUser),
		WorkdirPos: d.fieldPos(fs, "workdir"), UserPos: d.fieldPos(fs, "user"),
	}
	if v := value(fs, "command"); v != nil {
		s.Command = d.strs(v)
	}
	if s.UserPos.Line == 0 {
		s.UserPos = s.Pos // the default user: the server is where it is decided
	}
	if v := value(fs, "mounts"); v != nil {
		for _, e := range d.list(v) {
			m := d.fields(e, "source", "target", "mode", "hide")
			mt := Mount{
				Source: d.strOr(m, "source", ""), Target: d.strOr(m, "target", ""), Mode: d.strOr(m, "mode", defaultMountMode),
				Pos: d.pos(e), SourcePos: d.fieldPos(m, "source"), TargetPos: d.fieldPos(m, "target")}
			if h := value(m, "hide"); h != nil {
				mt.Hide, mt.HideAt = []string{}, d.fieldPos(m, "hide")
				for _, he := range d.list(h) {
					mt.Hide = append(mt.Hide, d.str(he))
					mt.HidePos = append(mt.HidePos, d.pos(he))
				}
			}
			s.Mounts = append(s.Mounts, mt)
		}
	}
	scratch := func(v ast.Expr, pos Pos) {
		sc := d.fields(v, "target", "size")
		s.Scratch = append(s.Scratch, Scratch{Target: d.strOr(sc, "target", defaultScratchTarget), Size: d.strOr(sc, "size", ""),
			Pos: pos, TargetPos: d.fieldPos(sc, "target"), SizePos: d.fieldPos(sc, "size")})
		if last := &s.Scratch[len(s.Scratch)-1]; last.TargetPos.Line == 0 {
			last.TargetPos = last.Pos // the default target
		}
	}
	switch v := value(fs, "scratch"); v.(type) {
	case nil:
	case *ast.ListLit:
		s.ScratchList = true
		for _, e := range d.list(v) {
			scratch(e, d.pos(e))
		}
	default:
		scratch(v, d.fieldPos(fs, "scratch"))
	}
	if v := value(fs, "proc"); v != nil {
		s.Proc = d.bool(v)
	}
	s.ProcPos = d.fieldPos(fs, "proc")
	if v := value(fs, "env"); v != nil {
		for _, e := range d.list(v) {
			s.Env = append(s.Env, EnvName{Name: d.str(e), Pos: d.pos(e)})
		}
	}
	if v := value(fs, "setenv"); v != nil {
		set, order, ok := plainFields(structElts(v))
		if !ok {
			d.bad = true
		}
		slices.Sort(order) // as decode reads them: by name
		for _, n := range order {
			s.SetEnv = append(s.SetEnv, EnvValue{Name: n, Value: d.str(set[n].Value), Pos: d.pos(set[n])})
		}
	}
	s.Network.Pos = d.fieldPos(fs, "network")
	switch v := value(fs, "network"); v.(type) {
	case nil:
	case *ast.StructLit:
		n := d.fields(v, "allow")
		for _, e := range d.list(value(n, "allow")) {
			s.Network.Allow = append(s.Network.Allow, Egress{Dest: d.str(e), Pos: d.pos(e)})
		}
	default:
		if d.str(v) != defaultNetwork {
			d.bad = true
		}
	}
	if v := value(fs, "unprotect"); v != nil {
		for _, e := range d.list(v) {
			s.Unprotect = append(s.Unprotect, Unprotect{Name: d.str(e), Pos: d.pos(e)})
		}
	}
	if v := value(fs, "limits"); v != nil {
		l := d.fields(v, "memory", "pids", "cpus")
		s.Limits = Limits{Memory: d.strOr(l, "memory", ""), Pos: d.fieldPos(fs, "limits"), MemoryPos: d.fieldPos(l, "memory")}
		if v := value(l, "pids"); v != nil {
			s.Limits.Pids = d.int(v)
		}
		if v := value(l, "cpus"); v != nil {
			s.Limits.CPUs = d.float(v)
		}
	}
	s.Runtime = d.strOr(fs, "runtime", defaultRuntime)
	if v := value(fs, "backends"); v != nil {
		s.Backends = d.strs(v)
	}
	s.BackendsPos = d.fieldPos(fs, "backends")
	if v := value(fs, "waive"); v != nil {
		for _, e := range d.list(v) {
			w := d.fields(e, "rule", "reason", "expires")
			s.Waive = append(s.Waive, Waiver{Rule: d.strOr(w, "rule", ""), Reason: d.strOr(w, "reason", ""),
				Expires: d.strOr(w, "expires", ""), Pos: d.pos(e)})
		}
	}
	if v := value(fs, "accept"); v != nil {
		for _, e := range d.list(v) {
			s.Accept = append(s.Accept, Accept{Name: d.str(e), Pos: d.pos(e)})
		}
	}
	if v := value(fs, "packs"); v != nil {
		for _, e := range d.list(v) {
			s.Packs = append(s.Packs, PackName{Name: d.str(e), Pos: d.pos(e)})
		}
	}
	if v := value(fs, "tools"); v != nil {
		s.Tools = d.tools(v, d.fieldPos(fs, "tools"))
	}
	if v := value(fs, "credentials"); v != nil {
		creds, order, ok := plainFields(structElts(v))
		if !ok {
			d.bad = true
		}
		slices.Sort(order) // as decode reads them: by name
		for _, n := range order {
			s.Credentials = append(s.Credentials, d.credential(n, creds[n]))
		}
	}
	return s, !d.bad
}

// credential reads one entry of a credentials section.
func (d *plainDecoder) credential(name string, f *ast.Field) Credential {
	fs := d.fields(f.Value, "from", "to", "as")
	c := Credential{Name: name, Pos: d.pos(f), FromPos: d.fieldPos(fs, "from"), AsPos: d.fieldPos(fs, "as")}
	if v := value(fs, "from"); v != nil {
		from := d.fields(v, "env", "command")
		c.FromEnv = d.strOr(from, "env", "")
		if v := value(from, "command"); v != nil {
			c.FromCommand = d.strs(v)
		}
	}
	if v := value(fs, "to"); v != nil {
		for _, e := range d.list(v) {
			c.To = append(c.To, d.str(e))
			c.ToPos = append(c.ToPos, d.pos(e))
		}
	}
	if v := value(fs, "as"); v != nil {
		as := d.fields(v, "header", "format", "query")
		c.Header, c.Format, c.Query = d.strOr(as, "header", ""), d.strOr(as, "format", ""), d.strOr(as, "query", "")
	}
	return c.defaultPos()
}

// tools reads a server's tools section, its args sorted as decode sorts them.
func (d *plainDecoder) tools(v ast.Expr, at Pos) *Tools {
	fs := d.fields(v, "allow", "deny", "args", "pin", "onPinChange")
	t := &Tools{Pos: at, OnPinChange: d.strOr(fs, "onPinChange", defaultOnPinChange),
		OnPinChangePos: d.fieldPos(fs, "onPinChange"), PinPos: d.fieldPos(fs, "pin")}
	if t.OnPinChangePos.Line == 0 {
		t.OnPinChangePos = at // the default: the section decides
	}
	if v := value(fs, "pin"); v != nil {
		t.Pin = d.bool(v)
	}
	names := func(name string) []ToolName {
		var out []ToolName
		if v := value(fs, name); v != nil {
			for _, e := range d.list(v) {
				out = append(out, ToolName{Pattern: d.str(e), Pos: d.pos(e)})
			}
		}
		return out
	}
	t.Allow, t.Deny = names("allow"), names("deny")
	if v := value(fs, "args"); v != nil {
		tools, order, ok := plainFields(structElts(v))
		if !ok {
			d.bad = true
		}
		slices.Sort(order)
		for _, tool := range order {
			args, argOrder, ok := plainFields(structElts(tools[tool].Value))
			if !ok {
				d.bad = true
			}
			slices.Sort(argOrder)
			for _, arg := range argOrder {
				r := d.fields(args[arg].Value, "under", "pattern", "enum", "maxBytes")
				ta := ToolArg{Tool: tool, Arg: arg, Pos: d.pos(args[arg]), Pattern: d.strOr(r, "pattern", ""),
					PatternAt: d.fieldPos(r, "pattern")}
				if v := value(r, "under"); v != nil {
					for _, e := range d.list(v) {
						ta.Under = append(ta.Under, d.str(e))
						ta.UnderPos = append(ta.UnderPos, d.pos(e))
					}
				}
				if v := value(r, "enum"); v != nil {
					ta.Enum = d.strs(v)
				}
				if v := value(r, "maxBytes"); v != nil {
					ta.MaxBytes = d.int(v)
				}
				t.Args = append(t.Args, ta)
			}
		}
	}
	return t
}
