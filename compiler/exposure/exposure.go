// Package exposure scores a plan: each grant it makes weighs what the
// reviewed data in weights.cue says for its kind and refinement (a
// read-write home folder heavy, one read-only project folder light), and a
// server's exposure is the sum. The score is a review aid that ranks grants
// and servers; it proves nothing (the kernel enforces the grants, whatever
// they weigh). It reads the plan alone, never the disk, so it is the same
// on every machine, and it is deterministic: terms come in the order of
// (*compiler.Plan).Grants().
//
// Adding a grant always raises the score: every weight is at least 1.
package exposure

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Term is one grant's share of the score.
type Term struct {
	Kind       compiler.GrantKind `json:"kind"`       // as Grants() gives it
	Summary    string             `json:"summary"`    // as Grants() gives it
	Pos        position.Pos       `json:"pos"`        // as Grants() gives it
	Refinement string             `json:"refinement"` // which weight applied within the kind: "home", "secret", "wildcard", ".git"...
	Weight     int                `json:"weight"`
	Reason     string             `json:"reason"`
	// Stores names the credential stores (".ssh", relative to the home) a
	// mount of refinement "credentials" is, lies in or holds; nil otherwise.
	Stores []string `json:"stores,omitempty"`
}

// Grant is the grant the term weighs.
func (t Term) Grant() compiler.Grant {
	return compiler.Grant{Kind: t.Kind, Summary: t.Summary, Pos: t.Pos}
}

// Exposure is a server's score and its breakdown.
type Exposure struct {
	Server string `json:"server"`
	Total  int    `json:"total"`
	Terms  []Term `json:"terms"` // one per grant, in Grants() order
}

// Score weighs every grant of p with the embedded weights.
func Score(p *compiler.Plan) Exposure { return Weights().Score(p) }

// Score weighs every grant of p with t.
func (t *Table) Score(p *compiler.Plan) Exposure {
	e := Exposure{Server: p.Server, Terms: []Term{}}
	var (
		env       = p.EnvNames()
		rules     = p.Network.Rules()
		unprotect = p.UnprotectedNames()
		accept    = p.AcceptNames()
		nth       = map[string]int{} // per field of the plan, how many of its grants were weighed
		next      = func(field string) int { i := nth[field]; nth[field]++; return i }
	)
	// Grants() walks the plan's fields in a fixed order, one grant per
	// element: the n-th grant of a field's kinds is its n-th element.
	for _, g := range p.Grants() {
		term := Term{Kind: g.Kind, Summary: g.Summary, Pos: g.Pos}
		w, known := Weight{}, false
		switch g.Kind {
		case compiler.GrantMountRO, compiler.GrantMountRW:
			if i := next("mounts"); i < len(p.Mounts) {
				var class string
				class, term.Stores = t.MountClass(p.Mounts[i].Source)
				w, known = t.Lookup(g.Kind, class)
			}
		case compiler.GrantScratch:
			w, known = t.Lookup(g.Kind, "bounded")
		case compiler.GrantEnv:
			if i := next("env"); i < len(env) {
				class := envPlain
				if t.SecretEnv(env[i]) {
					class = envSecret
				}
				w, known = t.Lookup(g.Kind, class)
			}
		case compiler.GrantSetEnv:
			w, known = t.Lookup(g.Kind, "constant")
		case compiler.GrantPack:
			if i := next("packs"); i < len(p.Packs) {
				w, known = t.Lookup(g.Kind, p.Packs[i].Name)
			}
		case compiler.GrantEgress:
			if i := next("egress"); i < len(rules) {
				w, known = t.Lookup(g.Kind, EgressClass(rules[i]))
			}
		case compiler.GrantUnprotect:
			if i := next("unprotect"); i < len(unprotect) {
				if w, known = t.Lookup(g.Kind, unprotect[i]); !known {
					w, known = t.Lookup(g.Kind, unprotectOther)
				}
			}
		case compiler.GrantDegrade:
			if i := next("accept"); i < len(accept) {
				w, known = t.Lookup(g.Kind, accept[i])
			}
		case compiler.GrantRootUser:
			w, known = t.Lookup(g.Kind, "uid0")
		case compiler.GrantInvoker:
			w, known = t.Lookup(g.Kind, "invoker")
		case compiler.GrantTool:
			if i := next("tools"); p.Tools != nil && i < len(p.Tools.Allow) {
				w, known = t.Lookup(g.Kind, ToolClass(p.Tools.Allow[i].Pattern))
			}
		case compiler.GrantToolArg:
			w, known = t.Lookup(g.Kind, "constraint")
		case compiler.GrantCredential:
			w, known = t.Lookup(g.Kind, "bound")
		}
		if !known {
			w = t.Unknown
		}
		term.Refinement, term.Weight, term.Reason = w.Refinement, w.Weight, w.Reason
		e.Terms = append(e.Terms, term)
		e.Total += w.Weight
	}
	return e
}

// Label is the term's kind and refinement, as the text shows them:
// "rw mount: home".
func (t Term) Label() string { return string(t.Kind) + ": " + t.Refinement }

// Explain renders the breakdown for a reviewer: the total, then one line
// per grant with its weight, kind and refinement, what it grants and where
// the policy asks for it, and the reason on the line below.
//
//	code-index: exposure 7 (2 grants)
//	  6  rw mount: in project  ${PROJECT_ROOT}/shop -> /workspace  (mcpolicy.cue:12:11)
//	     one folder of the project writable, protected names at its top read-only
//	  1  scratch: bounded  tmpfs /tmp, 256m  (mcpolicy.cue:15:2)
//	     a bounded tmpfs private to the sandbox, gone when it exits; counted so every grant adds
func Explain(e Exposure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: exposure %d (%s)\n", e.Server, e.Total, compiler.Plural(len(e.Terms), "grant"))
	width := 1
	for _, t := range e.Terms {
		width = max(width, len(fmt.Sprint(t.Weight)))
	}
	for _, t := range e.Terms {
		fmt.Fprintf(&b, "  %*d  %s  %s", width, t.Weight, t.Label(), t.Summary)
		if len(t.Stores) > 0 {
			fmt.Fprintf(&b, " [%s]", "~/"+strings.Join(t.Stores, ", ~/"))
		}
		fmt.Fprintf(&b, "  (%s)\n", t.Pos)
		fmt.Fprintf(&b, "  %*s  %s\n", width, "", t.Reason)
	}
	return b.String()
}

// Line is the one-line form for a summary: "exposure 13".
func (e Exposure) Line() string { return fmt.Sprintf("exposure %d", e.Total) }

// The refinements of a tool allowed: a name, a glob, every tool.
const (
	toolName = "name"
	toolGlob = "glob"
	toolAll  = "all"
)

// ToolClass is the refinement of an allow entry of the tools section.
func ToolClass(pattern string) string {
	switch {
	case pattern == "*":
		return toolAll
	case strings.ContainsAny(pattern, "*?["):
		return toolGlob
	}
	return toolName
}
