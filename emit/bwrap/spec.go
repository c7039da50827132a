package bwrap

import (
	"encoding/json"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
)

// Spec returns the committed launch artefact (.mcpolicy/bwrap/SERVER.json)
// that client entries start through mcpolicy-launch, which checks its
// digest, opens every mount source without following symlinks and passes
// it to bwrap by descriptor. Host paths stay ${PROJECT_ROOT} and ${HOME}.
func Spec(p *compiler.Plan) ([]byte, error) {
	args, err := Args(p, compiler.Placeholders{}, Merged, 0)
	if err != nil {
		return nil, err
	}
	s := artefact.BwrapSpec{Backend: Backend, Server: p.Server, Plan: p.Hash, Env: append([]string{}, p.EnvNames()...), Unprotected: p.UnprotectedNames(), Args: args,
		ProgramPins: emit.ProgramPins(p), Tools: emit.ToolsDigest(p)}
	b, err := json.MarshalIndent(&s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
