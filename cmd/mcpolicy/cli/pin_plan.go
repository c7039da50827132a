package cli

import "github.com/mcpolicy/mcpolicy/compiler"

// pinsTools reports whether the plan's policy reads a pin (tools: pin:
// true).
func pinsTools(p *compiler.Plan) bool {
	return false
}

// unrelayed takes the tool section out of the plan pin's child starts:
// no relay between pin and the server it lists.
func unrelayed(p *compiler.Plan) {}
