package why

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// env answers for an environment variable: an env grant passes it, the
// backend may set it itself, else the cleared environment keeps it out.
func (e *eval) env(v *Verdict, name string) {
	defer finish(v)
	for _, g := range e.p.Credentials {
		if g.Name != name {
			continue
		}
		// The variable is set, to a placeholder: the value is not reachable.
		v.At = append(v.At, "a placeholder; the real value is injected by the proxy for "+strings.Join(g.To, ", ")+" only")
		src := compiler.SourceSummary(g.From)
		if cv, ok := e.be.(emit.CredentialValues); ok {
			src = cv.CredentialValue(e.p, g)
		}
		v.Stops = append(v.Stops, Stop{Rule: StopCredential, Pos: e.m.pos(orPos(e.p.CredentialPos[name].Entry, e.p.Pos)),
			Detail: fmt.Sprintf("the value (%s) stays outside the sandbox: the egress proxy sends it as %s on requests to those destinations alone, and puts the placeholder back in their responses",
				src, compiler.InjectionSummary(g.As))})
		return
	}
	for _, g := range e.p.Env {
		if g.Name != name {
			continue
		}
		v.Access = append(v.Access, Passed)
		v.Via = append(v.Via, Grant{Kind: string(compiler.GrantEnv), Summary: "environment variable " + name, Pos: e.m.pos(orPos(g.Pos, e.p.Pos))})
		from := "the value comes from the environment the client starts the server with"
		switch {
		case e.be.EnvFile() && launch.ClientOwnEnv[name]:
			// A client that expands nothing sets it of its own (the entry
			// sets PATH for the launcher): the file's is the user's.
			from += " (Claude Desktop and the other clients that pass none set " + name + " of their own: there the env file's value wins, --env-file, ~/.config/mcpolicy/env)"
		case e.be.EnvFile():
			from += ", else from the env file (--env-file, ~/.config/mcpolicy/env) for clients that pass none"
		}
		v.At = append(v.At, "by name: "+from+"; never written into a policy, artefact or argv")
		return
	}
	env := e.be.ServerEnv(e.p)
	if how, ok := env.Set[name]; ok {
		v.Access = append(v.Access, Passed)
		v.At = append(v.At, how)
		return
	}
	v.Stops = append(v.Stops, Stop{Rule: StopEnvCleared, Detail: fmt.Sprintf("no env grant names %s: the server's environment is empty but for its grants (%s)", name, env.Cleared)})
}
