package schema

import (
	"fmt"
	"sort"

	"cuelang.org/go/cue"
)

type rawPolicy struct {
	Version string `json:"version"`
}

type rawServer struct {
	Description string   `json:"description"`
	Image       string   `json:"image"`
	Command     []string `json:"command"`
	Workdir     string   `json:"workdir"`
	User        string   `json:"user"`
	Mounts      []struct {
		Source string   `json:"source"`
		Target string   `json:"target"`
		Mode   string   `json:"mode"`
		Hide   []string `json:"hide"`
	} `json:"mounts"`
	Scratch   any               `json:"scratch"`
	Proc      bool              `json:"proc"`
	Env       []string          `json:"env"`
	SetEnv    map[string]string `json:"setenv"`
	Network   any               `json:"network"`
	Unprotect []string          `json:"unprotect"`
	Runtime   string            `json:"runtime"`
	Backends  []string          `json:"backends"`
	Waive     []struct {
		Rule    string `json:"rule"`
		Reason  string `json:"reason"`
		Expires string `json:"expires"`
	} `json:"waive"`
	Accept []string `json:"accept"`
	Packs  []string `json:"packs"`
	Tools  *struct {
		Allow       []string                         `json:"allow"`
		Deny        []string                         `json:"deny"`
		Args        map[string]map[string]rawArgRule `json:"args"`
		Pin         bool                             `json:"pin"`
		OnPinChange string                           `json:"onPinChange"`
	} `json:"tools"`
	Credentials map[string]rawCredential `json:"credentials"`
	Limits      *struct {
		Memory string  `json:"memory"`
		Pids   int64   `json:"pids"`
		CPUs   float64 `json:"cpus"`
	} `json:"limits"`
}

type rawCredential struct {
	From struct {
		Env     string   `json:"env"`
		Command []string `json:"command"`
	} `json:"from"`
	To []string `json:"to"`
	As struct {
		Header string `json:"header"`
		Format string `json:"format"`
		Query  string `json:"query"`
	} `json:"as"`
}

type rawArgRule struct {
	Under    []string `json:"under"`
	Pattern  string   `json:"pattern"`
	Enum     []string `json:"enum"`
	MaxBytes int64    `json:"maxBytes"`
}

// decode reads the validated value into Go types. Values (with defaults) come
// from the unified value; positions come from the user's data.
func decode(file string, unified, data cue.Value, locate func([]string) (Pos, bool)) (*Policy, error) {
	var rp rawPolicy
	if err := unified.Decode(&rp); err != nil {
		return nil, fmt.Errorf("%s: internal error decoding policy: %w", file, err)
	}
	p := &Policy{File: file, Version: rp.Version}
	it, err := unified.LookupPath(cue.ParsePath("servers")).Fields()
	if err != nil {
		return nil, fmt.Errorf("%s: internal error reading servers: %w", file, err)
	}
	for it.Next() {
		name := it.Selector().Unquoted()
		var rs rawServer
		if err := it.Value().Decode(&rs); err != nil {
			return nil, fmt.Errorf("%s: internal error decoding server %q: %w", file, name, err)
		}
		at := func(sels ...cue.Selector) Pos {
			sels = append([]cue.Selector{cue.Str("servers"), cue.Str(name)}, sels...)
			if locate != nil { // Jsonnet: data positions are in the rendered JSON
				labels := make([]string, len(sels))
				for i, s := range sels {
					labels[i] = s.String()
				}
				if !data.LookupPath(cue.MakePath(sels...)).Exists() {
					return Pos{}
				}
				pos, _ := locate(labels)
				pos.File = file
				return pos
			}
			return posOf(data.LookupPath(cue.MakePath(sels...)).Pos(), file)
		}
		s := Server{
			Name: name, Pos: at(), Description: rs.Description, Image: rs.Image,
			Command: rs.Command, Workdir: rs.Workdir, User: rs.User,
			WorkdirPos: at(cue.Str("workdir")), UserPos: at(cue.Str("user")),
		}
		if s.UserPos.Line == 0 {
			s.UserPos = s.Pos // the default user: the server is where it is decided
		}
		for i, m := range rs.Mounts {
			s.Mounts = append(s.Mounts, Mount{Source: m.Source, Target: m.Target, Mode: m.Mode,
				Pos:       at(cue.Str("mounts"), cue.Index(i)),
				SourcePos: at(cue.Str("mounts"), cue.Index(i), cue.Str("source")),
				TargetPos: at(cue.Str("mounts"), cue.Index(i), cue.Str("target"))})
			if m.Hide != nil {
				last := &s.Mounts[len(s.Mounts)-1]
				last.Hide, last.HideAt = m.Hide, at(cue.Str("mounts"), cue.Index(i), cue.Str("hide"))
				for j := range m.Hide {
					last.HidePos = append(last.HidePos, at(cue.Str("mounts"), cue.Index(i), cue.Str("hide"), cue.Index(j)))
				}
			}
		}
		scratch := func(v any, sels ...cue.Selector) {
			m, _ := v.(map[string]any)
			sc := Scratch{Target: fmt.Sprint(m["target"]), Size: fmt.Sprint(m["size"]), Pos: at(sels...),
				TargetPos: at(append(sels, cue.Str("target"))...), SizePos: at(append(sels, cue.Str("size"))...)}
			if sc.TargetPos.Line == 0 {
				sc.TargetPos = sc.Pos // the default target
			}
			s.Scratch = append(s.Scratch, sc)
		}
		switch v := rs.Scratch.(type) {
		case map[string]any:
			scratch(v, cue.Str("scratch"))
		case []any:
			s.ScratchList = true
			for i, e := range v {
				scratch(e, cue.Str("scratch"), cue.Index(i))
			}
		}
		s.Proc, s.ProcPos = rs.Proc, at(cue.Str("proc"))
		for i, e := range rs.Env {
			s.Env = append(s.Env, EnvName{Name: e, Pos: at(cue.Str("env"), cue.Index(i))})
		}
		for _, n := range sortedKeys(rs.SetEnv) {
			s.SetEnv = append(s.SetEnv, EnvValue{Name: n, Value: rs.SetEnv[n], Pos: at(cue.Str("setenv"), cue.Str(n))})
		}
		s.Network.Pos = at(cue.Str("network"))
		if n, ok := rs.Network.(map[string]any); ok {
			allow, _ := n["allow"].([]any)
			for i, a := range allow {
				s.Network.Allow = append(s.Network.Allow, Egress{Dest: fmt.Sprint(a),
					Pos: at(cue.Str("network"), cue.Str("allow"), cue.Index(i))})
			}
		}
		for i, u := range rs.Unprotect {
			s.Unprotect = append(s.Unprotect, Unprotect{Name: u, Pos: at(cue.Str("unprotect"), cue.Index(i))})
		}
		if rs.Limits != nil {
			s.Limits = Limits{Memory: rs.Limits.Memory, Pids: rs.Limits.Pids, CPUs: rs.Limits.CPUs, Pos: at(cue.Str("limits")),
				MemoryPos: at(cue.Str("limits"), cue.Str("memory"))}
		}
		s.Runtime = rs.Runtime
		s.Backends, s.BackendsPos = rs.Backends, at(cue.Str("backends"))
		for i, w := range rs.Waive {
			s.Waive = append(s.Waive, Waiver{Rule: w.Rule, Reason: w.Reason, Expires: w.Expires, Pos: at(cue.Str("waive"), cue.Index(i))})
		}
		for i, a := range rs.Accept {
			s.Accept = append(s.Accept, Accept{Name: a, Pos: at(cue.Str("accept"), cue.Index(i))})
		}
		for i, n := range rs.Packs {
			s.Packs = append(s.Packs, PackName{Name: n, Pos: at(cue.Str("packs"), cue.Index(i))})
		}
		if t := rs.Tools; t != nil {
			tp := cue.Str("tools")
			s.Tools = &Tools{Pos: at(tp), Pin: t.Pin, PinPos: at(tp, cue.Str("pin")),
				OnPinChange: t.OnPinChange, OnPinChangePos: at(tp, cue.Str("onPinChange"))}
			if s.Tools.OnPinChangePos.Line == 0 {
				s.Tools.OnPinChangePos = s.Tools.Pos // the default: the section decides
			}
			for i, a := range t.Allow {
				s.Tools.Allow = append(s.Tools.Allow, ToolName{Pattern: a, Pos: at(tp, cue.Str("allow"), cue.Index(i))})
			}
			for i, d := range t.Deny {
				s.Tools.Deny = append(s.Tools.Deny, ToolName{Pattern: d, Pos: at(tp, cue.Str("deny"), cue.Index(i))})
			}
			for _, tool := range sortedKeys(t.Args) {
				for _, arg := range sortedKeys(t.Args[tool]) {
					r := t.Args[tool][arg]
					sels := []cue.Selector{tp, cue.Str("args"), cue.Str(tool), cue.Str(arg)}
					ta := ToolArg{Tool: tool, Arg: arg, Pos: at(sels...), Under: r.Under, Pattern: r.Pattern,
						PatternAt: at(append(sels, cue.Str("pattern"))...), Enum: r.Enum, MaxBytes: r.MaxBytes}
					for j := range r.Under {
						ta.UnderPos = append(ta.UnderPos, at(append(sels, cue.Str("under"), cue.Index(j))...))
					}
					s.Tools.Args = append(s.Tools.Args, ta)
				}
			}
		}
		for _, n := range sortedKeys(rs.Credentials) {
			rc, cp := rs.Credentials[n], []cue.Selector{cue.Str("credentials"), cue.Str(n)}
			c := Credential{Name: n, Pos: at(cp...), FromEnv: rc.From.Env, FromCommand: rc.From.Command,
				FromPos: at(append(cp, cue.Str("from"))...), To: rc.To, Header: rc.As.Header, Format: rc.As.Format,
				Query: rc.As.Query, AsPos: at(append(cp, cue.Str("as"))...)}
			for i := range rc.To {
				c.ToPos = append(c.ToPos, at(append(cp, cue.Str("to"), cue.Index(i))...))
			}
			s.Credentials = append(s.Credentials, c.defaultPos())
		}
		p.Servers = append(p.Servers, s)
	}
	return p, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
