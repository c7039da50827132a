package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/bytesize"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

// GrantKind names a kind of addition a plan makes to the empty sandbox.
type GrantKind string

const (
	GrantMountRO   GrantKind = "ro mount"
	GrantMountRW   GrantKind = "rw mount"
	GrantScratch   GrantKind = "scratch"
	GrantEnv       GrantKind = "env"
	GrantSetEnv    GrantKind = "setenv"
	GrantEgress    GrantKind = "egress"
	GrantUnprotect GrantKind = "unprotect"
	GrantRootUser  GrantKind = "root user"
	GrantInvoker   GrantKind = "invoking user"
	GrantDegrade   GrantKind = "accepted"
	GrantPack      GrantKind = "pack"
	// GrantTool is one allow entry of the tools section: a tool (or glob
	// of tools) the client is shown and may call.
	GrantTool GrantKind = "tool"
	// GrantToolArg is one argument's constraints: what a call may pass
	// there (counted as a grant, so that each is reviewed and diffed).
	GrantToolArg GrantKind = "tool-arg"
	// GrantCredential is one credential: a value the server may have sent
	// to its destinations, never holding it (its destinations are part of
	// the grant).
	GrantCredential GrantKind = "credential"
)

// noun is the kind as counted: "1 ro mount", "2 ro mounts", "2 env vars".
func (k GrantKind) noun(n int) string {
	word := map[GrantKind]string{GrantEnv: "env var", GrantSetEnv: "set env var", GrantEgress: "egress host", GrantUnprotect: "unprotected path",
		GrantDegrade: "accepted degradation", GrantPack: "runtime pack",
		GrantToolArg: "tool argument constraint"}[k]
	if word == "" {
		word = string(k)
	}
	if n == 1 || k == GrantScratch || k == GrantRootUser || k == GrantInvoker {
		return word
	}
	return word + "s"
}

// Grant is one counted addition, with the place in the policy that asks for it.
type Grant struct {
	Kind    GrantKind
	Summary string
	Pos     position.Pos
}

// Grants lists every addition of the plan, in a fixed order: mounts,
// scratch, environment, egress, credentials, unprotected paths, accepted degradations,
// runtime packs (one grant each, whatever they hold), the tools allowed
// and the argument constraints, root user.
func (p *Plan) Grants() []Grant {
	var gs []Grant
	for _, m := range p.Mounts {
		kind := GrantMountRO
		if m.Mode == ReadWrite {
			kind = GrantMountRW
		}
		gs = append(gs, Grant{kind, fmt.Sprintf("%s -> %s", m.Source, m.Target), m.Pos})
	}
	for _, s := range p.Scratches() {
		gs = append(gs, Grant{GrantScratch, fmt.Sprintf("tmpfs %s, %s", s.Target, bytesize.Format(s.SizeBytes)), s.Pos})
	}
	for _, e := range p.Env {
		gs = append(gs, Grant{GrantEnv, "environment variable " + e.Name, orPos(e.Pos, p.Pos)})
	}
	for _, e := range p.SetEnv {
		gs = append(gs, Grant{GrantSetEnv, fmt.Sprintf("environment variable %s=%s (the policy's value)", e.Name, strconv.Quote(e.Value)), orPos(e.Pos, p.Pos)})
	}
	for _, d := range p.Network.Allow {
		gs = append(gs, Grant{GrantEgress, "egress to " + d.String(), orPos(d.Pos, p.Network.Pos)})
	}
	for _, g := range p.Credentials {
		summary := CredentialSummary(g)
		if p.inClusterOnly() {
			summary = ClusterCredentialSummary(g)
		}
		gs = append(gs, Grant{GrantCredential, summary, orPos(p.CredentialPos[g.Name].Entry, p.Network.Pos)})
	}
	for _, u := range p.Unprotected {
		gs = append(gs, Grant{GrantUnprotect, u.Name + " writable inside rw mounts", orPos(u.Pos, p.Pos)})
	}
	for _, a := range p.Accept {
		gs = append(gs, Grant{GrantDegrade, "degradation " + a.Name, orPos(a.Pos, p.Pos)})
	}
	for _, k := range p.Packs {
		gs = append(gs, Grant{GrantPack, k.Summary(), orPos(k.Pos, p.Pos)})
	}
	if p.Tools != nil {
		for _, r := range p.Tools.Allow {
			what := r.Pattern + " shown and callable"
			if isGlob(r.Pattern) {
				what = "tools matching " + r.Pattern + " shown and callable"
			}
			if r.Pattern == "*" {
				what = "every tool shown and callable (less what deny removes)"
			}
			gs = append(gs, Grant{GrantTool, what, orPos(p.ToolsPos.At(r.Field), p.Pos)})
		}
		for _, a := range p.Tools.Args {
			gs = append(gs, Grant{GrantToolArg, ArgRuleSummary(a), orPos(p.ToolsPos.At(a.Field), p.Pos)})
		}
	}
	if p.User.Root() {
		gs = append(gs, Grant{GrantRootUser, "runs as uid 0 (root) inside the sandbox", p.UserPos})
	}
	if p.User.Invoker {
		gs = append(gs, Grant{GrantInvoker, "runs as the invoking user (writes rw mounts with their uid)", p.UserPos})
	} else if p.RunsOn(backendtraits.Seatbelt) {
		// sandbox-exec cannot switch ids without root, and the wrapper
		// refuses root: the server gets the invoker's, whatever user says.
		gs = append(gs, Grant{GrantInvoker, fmt.Sprintf("on seatbelt runs as the invoking user, not %s (writes rw mounts with their uid)", p.User), orPos(p.UserPos, p.Pos)})
	}
	return gs
}

// ArgRuleSummary says what one argument constraint lets through:
// `argument path of read_file: under /workspace`.
func ArgRuleSummary(a toolpolicy.ArgRule) string {
	var parts []string
	if len(a.Under) > 0 {
		parts = append(parts, "a path under "+strings.Join(a.Under, " or "))
	}
	if a.Pattern != "" {
		parts = append(parts, "matching "+strconv.Quote(a.Pattern))
	}
	if len(a.Enum) > 0 {
		q := make([]string, len(a.Enum))
		for i, e := range a.Enum {
			q[i] = strconv.Quote(e)
		}
		parts = append(parts, "one of "+strings.Join(q, ", "))
	}
	if a.MaxBytes > 0 {
		parts = append(parts, fmt.Sprintf("at most %d bytes", a.MaxBytes))
	}
	return fmt.Sprintf("argument %s of %s: %s", a.Arg, a.Tool, strings.Join(parts, "; "))
}

// RunsOn reports whether the plan lists backend name.
func (p *Plan) RunsOn(name string) bool {
	for _, b := range p.Backends {
		if b == name {
			return true
		}
	}
	return false
}

// orPos is tolerant of plans decoded from JSON, which carry no positions.
func orPos(pos, fallback position.Pos) position.Pos {
	if pos == (position.Pos{}) {
		return fallback
	}
	return pos
}

// GrantSummary is "2 grants: 1 rw mount, 1 scratch".
func GrantSummary(gs []Grant) string {
	if len(gs) == 0 {
		return "0 grants"
	}
	var order []GrantKind
	count := map[GrantKind]int{}
	for _, g := range gs {
		if count[g.Kind] == 0 {
			order = append(order, g.Kind)
		}
		count[g.Kind]++
	}
	parts := make([]string, len(order))
	for i, k := range order {
		parts[i] = fmt.Sprintf("%d %s", count[k], k.noun(count[k]))
	}
	return Plural(len(gs), "grant") + ": " + strings.Join(parts, ", ")
}

// Plural is "1 grant", "2 grants".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// HoldsGrantAt reports whether a mount or the scratch is at dir (a path in
// the sandbox) or below it: a read-only mask there would hide the grant or
// refuse its mount point.
func (p *Plan) HoldsGrantAt(dir string) bool {
	var targets []string
	for _, m := range p.Mounts {
		targets = append(targets, m.Target)
	}
	for _, s := range p.Tmpfs() {
		targets = append(targets, s.Target)
	}
	for _, t := range targets {
		if t == dir || strings.HasPrefix(t, dir+"/") {
			return true
		}
	}
	return false
}
