package prove

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
	"mvdan.cc/sh/v3/syntax"
)

// whyAsk is why.Ask; the tests put a wrong answer in its place to see the
// disagreement reported.
var whyAsk = why.Ask

// askWhy records on row what `mcpolicy why` says of a's target — asked
// the way package why maps a probe's attempt (why.ProbeTarget,
// why.ProbeAllows), of the same plan, on the same backend, with this
// machine's file system — and sets it against the row's expectation.
// policy is the policy path as given, for the command in a note.
func askWhy(row *Row, v planView, backend string, hostView bool, a attempt, policy string) {
	row.WhyAgrees = true
	target := a.target
	if hostView {
		target = a.host
	}
	t, err := why.ProbeTarget(v.p, probe.Attempt{Op: a.op, Target: target}, hostView)
	if errors.Is(err, why.ErrNoQuestion) {
		return
	}
	var verdict *why.Verdict
	if err == nil {
		m := why.Machine{Machine: v.m, Cwd: v.m.ProjectRoot, FS: true}
		var ans *why.Answer
		if ans, err = whyAsk([]*compiler.Plan{v.p}, t, m, backend); err == nil {
			if len(ans.Servers) != 1 || len(ans.Servers[0].Backends) != 1 {
				err = fmt.Errorf("no verdict for server %s on backend %s", v.p.Server, backend)
			} else {
				verdict = &ans.Servers[0].Backends[0]
			}
		}
	}
	if err != nil {
		// Not a disagreement: there is no prediction to set beside the
		// expectation. Shown in the row all the same.
		row.WhyNote = "why gave no answer: " + err.Error()
		return
	}
	if verdict.Refused != "" {
		// prove asks only of a backend that ran the probe: why saying it
		// refuses the plan is a bug in one of the two all the same.
		row.WhySays, row.WhyAgrees = "the backend refuses the plan", false
		row.Stop = []string{stopText(why.Stop{Rule: why.StopRefused, Detail: verdict.Refused})}
		row.WhyNote = fmt.Sprintf("why says %s refuses the plan at compile time, yet it ran the probe: one of the two is wrong", backend)
		return
	}
	reachable, says := why.ProbeAllows(*verdict, a.op)
	row.WhySays = says
	if reachable {
		for _, g := range verdict.Via {
			row.Grant = append(row.Grant, grantText(g))
		}
	} else {
		for _, s := range verdict.Stops {
			if s.Rule != why.StopAbsentProt { // not a stop: a name the server can create
				row.Stop = append(row.Stop, stopText(s))
			}
		}
	}
	if a.expect == "" || reachable == (a.expect == "allowed") {
		return
	}
	row.WhyAgrees = false
	because := ""
	if a.why != "" {
		because = " (" + a.why + ")"
	}
	row.WhyNote = fmt.Sprintf("why says %s on %s, prove expects %s%s: one of the two is wrong", says, backend, a.expect, because)
	if cmd := whyCommand(policy, v.p.Server, backend, t, row.Target); cmd != "" {
		row.WhyNote += "; ask: " + cmd
	}
}

// grantText is a grant as why lists it: "kind summary (pos)".
func grantText(g why.Grant) string {
	s := g.Kind + " " + g.Summary
	if g.Pos.File != "" {
		s += " (" + g.Pos.String() + ")"
	}
	return s
}

// stopText is a stop as "rule (pos): detail", the position when it has
// one.
func stopText(s why.Stop) string {
	out := s.Rule
	if s.Pos.File != "" {
		out += " (" + s.Pos.String() + ")"
	}
	if s.Detail != "" {
		out += ": " + s.Detail
	}
	return out
}

// stopRule is a stop's text without its detail: the rule and its
// position.
func stopRule(s string) string {
	r, _, _ := strings.Cut(s, ": ")
	return r
}

// whyCommand is the `mcpolicy why` a reviewer runs to see why's reasoning
// for a path row ("" for other rows: their targets in the report are not
// the ones asked).
func whyCommand(policy, server, backend string, t why.Target, shown string) string {
	if t.Kind != why.HostPath && t.Kind != why.SandboxPath || shown != t.Path {
		return ""
	}
	kind := "--sandbox"
	if t.Kind == why.HostPath {
		kind = "--host"
	}
	if policy == "" {
		policy = "."
	}
	var words []string
	for _, w := range []string{"mcpolicy", "why", "-p", policy, "--server", server, "--backend", backend, kind, t.Path} {
		q, err := syntax.Quote(w, syntax.LangPOSIX)
		if err != nil {
			return ""
		}
		words = append(words, q)
	}
	return strings.Join(words, " ")
}
