package emit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// ToolsFile is the plan's tool-surface artefact, which build writes at
// artefact.ToolsPath (the policy's tools section, its pin embedded, as
// indented JSON with a trailing newline), and its digest "sha256:HEX",
// which the backend artefacts carry so the launcher runs the relay with
// those bytes alone. Nil and "" when the plan has no tools section.
func ToolsFile(p *compiler.Plan) ([]byte, string) {
	if p.Tools == nil {
		return nil, ""
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // a description reads as the server wrote it
	e.SetIndent("", "  ")
	t := *p.Tools
	t.Plan = p.Hash
	if err := e.Encode(&t); err != nil {
		panic("internal error: the tool surface does not marshal: " + err.Error())
	}
	sum := sha256.Sum256(b.Bytes())
	return b.Bytes(), "sha256:" + hex.EncodeToString(sum[:])
}

// ToolsDigest is ToolsFile's digest alone: what a backend that runs the
// relay writes in its artefact ("" without a tools section).
func ToolsDigest(p *compiler.Plan) string {
	_, d := ToolsFile(p)
	return d
}

// Relayed is the enforcement row of a backend whose entries start the
// server through mcpolicy-launch, which runs the relay on the stdio pipe.
func Relayed() Row {
	return Row{Support: Enforced, How: "mcpolicy-launch runs the relay on the stdio pipe, outside the sandbox, with the tools artefact whose digest this artefact pins: tools/list filtered, a refused tools/call answered with a JSON-RPC error"}
}

// NotRelayed is the row of a backend that cannot run the relay: the
// client speaks to the server directly, so only the accepted
// degradation lets it start.
func NotRelayed(p *compiler.Plan, why string) Row {
	return Row{Support: Partial, How: "no relay on the stdio pipe (" + why + "): the client sees and calls every tool",
		Degradation: compiler.AcceptToolsNotRelayed,
		Alternative: "use the bwrap, landlock, docker or podman backend, whose entries run the relay",
		Pos:         p.ToolsPos.Section, Field: p.Field("tools")}
}
