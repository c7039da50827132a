// Package toolpolicy is the data of a server's tool surface (issue 40): which
// tools a client may see and call, the constraints on their arguments, and
// the pinned tool descriptions the server must keep showing. The compiler
// builds a Policy from a policy's tools section and its pin file; emitters
// write it beside the artefacts; the relay on the stdio pipe
// (runtime/toolrelay) enforces it. It is plain data and its checks: no I/O.
//
// The tool layer is a cooperating-server control, beside the kernel's:
// it decides what the model is offered and what calls reach the server,
// not what the process can open.
package toolpolicy

import "encoding/json"

// Policy is what the relay enforces for one server. Its JSON is the
// artefact `.mcpolicy/tools/SERVER.json`, whose digest the backend
// artefacts carry, so a launch uses only the reviewed bytes.
type Policy struct {
	Server string `json:"server"`
	// Plan is the hash of the plan the artefact was built from, set in
	// the artefact alone (never in the plan, whose hash it is): as every
	// artefact carries it, so `check` tells a rebuilt plan (stale) from a
	// hand edit (tampered).
	Plan string `json:"plan,omitempty"`
	// PolicyFile is the policy that says it, relative to the project root,
	// slash-separated; each rule carries its Field, so a refusal says where.
	PolicyFile string `json:"policyFile"`
	// Allow are the tool names or globs (path.Match syntax: *, ?, [...]) a
	// client may see and call: each one a counted grant. "*" allows all.
	Allow []Rule `json:"allow"`
	// Deny are names or globs never shown nor called, whatever Allow says.
	Deny []Rule `json:"deny,omitempty"`
	// Args are the constraints on arguments, sorted by Tool then Arg.
	Args []ArgRule `json:"args,omitempty"`
	// OnPinChange is what the relay does when tools/list differs from Pin:
	// "hide" the changed and new tools (the default) or "refuse" to go on.
	OnPinChange string `json:"onPinChange"`
	// Pin is the reviewed tools/list, nil when the policy pins none.
	Pin *Pin `json:"pin,omitempty"`
}

// Rule is one name or glob of Allow or Deny.
type Rule struct {
	Pattern string `json:"pattern"`
	Field   string `json:"field"` // where the policy says it: servers.NAME.tools.allow[0]
}

// ArgRule constrains one argument of one tool (Tool may be a glob). Every
// constraint set must hold; an argument absent from the call passes (the
// server's own schema says what is required).
type ArgRule struct {
	Tool  string `json:"tool"`
	Arg   string `json:"arg"`
	Field string `json:"field"` // servers.NAME.tools.args.TOOL.ARG
	// Under: the argument is a path that must lie, once made absolute
	// against Workdir and cleaned, under one of these sandbox paths.
	Under   []string `json:"under,omitempty"`
	Workdir string   `json:"workdir,omitempty"`
	// Pattern: an RE2 expression the whole string must match.
	Pattern string `json:"pattern,omitempty"`
	// Enum: the string must be one of these.
	Enum []string `json:"enum,omitempty"`
	// MaxBytes bounds the argument's JSON encoding, 0 for no bound.
	MaxBytes int64 `json:"maxBytes,omitempty"`
}

// Pin is a reviewed tools/list: the file `mcpolicy pin` writes beside the
// policy, and the part of it the compiler copies into Policy.
type Pin struct {
	Server string `json:"server"`
	// Digest is "sha256:HEX" of the canonical JSON of Tools (PinDigest);
	// the compiler refuses a pin file whose Tools do not match it.
	Digest string       `json:"digest"`
	Tools  []PinnedTool `json:"tools"` // sorted by Name
}

// PinnedTool is what a client is shown of one tool: the parts a server
// could change to steer the model (a rug pull, a poisoned description).
type PinnedTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema and Annotations change what the model is told, too.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}
