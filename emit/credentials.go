package emit

import (
	"github.com/mcpolicy/mcpolicy/compiler"
)

// Credentials is the restriction of a plan with credentials: their values
// stay outside the sandbox, the server holding placeholders.
const Credentials Restriction = "credentials"

// Injected is the row of a backend whose egress mcpolicy run supervises:
// the proxy holds the values and injects them.
func Injected() Row {
	return Row{Support: Enforced, How: "the server is given placeholders; mcpolicy's egress proxy, outside the sandbox, holds the values (read at spawn, in memory) and injects each on requests to its destinations alone, intercepting TLS for those hosts only under a CA made at spawn; start with mcpolicy run"}
}

// NotInjected is the row of a backend that has no path yet to keep a
// credential's value out of the sandbox: the plan is refused there.
func NotInjected(p *compiler.Plan, why, alt string) Row {
	r := Row{Support: Missing, How: "no path keeps the value out of the sandbox: " + why, Alternative: alt, Pos: p.Pos, Field: p.Field("credentials")}
	if len(p.Credentials) > 0 {
		g := p.Credentials[0]
		r.Field = g.Field
		if at := p.CredentialPos[g.Name].Entry; at.Line > 0 {
			r.Pos = at
		}
	}
	return r
}
