package diff

import (
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// credentialChanges: a credential added or removed, bound to more or
// fewer destinations, its value read elsewhere, or sent otherwise. A
// change of source or injection widens: another secret, or the same one
// in a place (a URL's query) where more may read it.
func credentialChanges(o, n *compiler.Plan, add addFunc) {
	old := map[string]credential.Grant{}
	for _, g := range o.Credentials {
		old[g.Name] = g
	}
	at := func(p *compiler.Plan, name string) position.Pos { return orPos(p.CredentialPos[name].Entry, p.Pos) }
	to := func(p *compiler.Plan, name, dest string) position.Pos {
		return orPos(p.CredentialPos[name].To[dest], at(p, name))
	}
	for _, g := range n.Credentials {
		og, ok := old[g.Name]
		delete(old, g.Name)
		if !ok {
			add("CREDENTIAL_ADDED", Widened, at(n, g.Name), position.Pos{}, "credential %s added: %s (from %s) for %s",
				g.Name, compiler.InjectionSummary(g.As), compiler.SourceSummary(g.From), strings.Join(g.To, ", "))
			continue
		}
		for _, d := range g.To {
			if !slices.Contains(og.To, d) {
				add("CREDENTIAL_DESTINATION_ADDED", Widened, to(n, g.Name, d), at(o, g.Name), "credential %s now also sent to %s", g.Name, d)
			}
		}
		for _, d := range og.To {
			if !slices.Contains(g.To, d) {
				add("CREDENTIAL_DESTINATION_REMOVED", Narrowed, at(n, g.Name), to(o, g.Name, d), "credential %s no longer sent to %s", g.Name, d)
			}
		}
		if !slices.Equal(og.From.Command, g.From.Command) || og.From.Env != g.From.Env {
			add("CREDENTIAL_SOURCE_CHANGED", Widened, at(n, g.Name), at(o, g.Name), "credential %s: %s -> %s",
				g.Name, compiler.SourceSummary(og.From), compiler.SourceSummary(g.From))
		}
		if og.As != g.As {
			add("CREDENTIAL_INJECTION_CHANGED", Widened, at(n, g.Name), at(o, g.Name), "credential %s: sent as %s -> %s",
				g.Name, compiler.InjectionSummary(og.As), compiler.InjectionSummary(g.As))
		}
	}
	for _, og := range o.Credentials {
		if _, gone := old[og.Name]; gone {
			add("CREDENTIAL_REMOVED", Narrowed, n.Pos, at(o, og.Name), "credential %s removed", og.Name)
		}
	}
}
