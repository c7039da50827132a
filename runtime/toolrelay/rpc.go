package toolrelay

import (
	"bytes"
	"encoding/json"
)

// The JSON-RPC error codes the relay answers with.
const (
	codeRefused    = -32001 // mcpolicy refusal: the policy says no
	codeParse      = -32700 // a client line that is not one JSON value
	codeInvalidReq = -32600 // a client message the relay will not read: too long, malformed
)

// The keys the relay reads, of a message and of a listed tool: a key
// spelled otherwise that a parser ignoring case reads as one of them
// makes the object unreadable to the relay (toolpolicy.ObjectKeys).
var (
	messageKeys = []string{"jsonrpc", "id", "method", "params", "result", "error"}
	pinnedKeys  = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
)

type errorData struct {
	Policy string `json:"policy"`
	Field  string `json:"field"`
	Tool   string `json:"tool,omitempty"`
	Arg    string `json:"arg,omitempty"`
}

type rpcError struct {
	Code    int        `json:"code"`
	Message string     `json:"message"`
	Data    *errorData `json:"data,omitempty"`
}

type errorResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

// refusal is a message the relay answers instead of forwarding.
type refusal struct {
	rpcError
	decision Decision
}

func (f *refusal) response(id json.RawMessage) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return encode(errorResponse{JSONRPC: "2.0", ID: id, Error: f.rpcError})
}

// encode is JSON without HTML escaping and without the trailing newline.
func encode(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		// cannot happen: the relay encodes its own types and raw JSON it parsed
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"mcpolicy: the relay could not encode its answer"}}`)
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// compact is raw without insignificant space, raw itself when it is not JSON.
func compact(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
