// Package credential is the data of a credential grant (issue 41): a
// secret the server may use but never hold. The policy names where its
// value comes from at spawn and the destinations it may be sent to, and
// how; the server is given a placeholder, and the egress proxy, outside
// the sandbox, puts the real value in its place on requests to those
// destinations alone. The compiler fills Grant; the proxy (runtime/egress)
// and the launch paths (runtime/supervise) enforce it. Plain data and its
// checks: no I/O.
package credential

// Grant is one credential a server may use. Its JSON is part of the
// plan (and so of its hash): adding one, or a destination to one, is a
// widening diff reports.
type Grant struct {
	// Name is the environment variable the server reads: it holds the
	// placeholder, never the value.
	Name string `json:"name"`
	// Field is where the policy says it: servers.NAME.credentials.ENV.
	Field string `json:"field"`
	From  Source `json:"from"`
	// To are the destinations ("host:port", the allowlist's canonical
	// spelling, each also in the server's egress allowlist) the value is
	// sent to. Sorted. No wildcard: a value is bound to named hosts.
	To []string  `json:"to"`
	As Injection `json:"as"`
}

// Source is where the launch reads the value at spawn, outside the
// sandbox. Exactly one is set.
type Source struct {
	// Env: a variable of the launch's environment, or of the env file
	// (default: Name).
	Env string `json:"env,omitempty"`
	// Command: argv run on the host at spawn, outside the sandbox, whose
	// standard output (trailing newline trimmed) is the value: a keychain,
	// `op read op://...`, `security find-generic-password -w ...`.
	Command []string `json:"command,omitempty"`
}

// Injection says how the proxy sends the value. Exactly one of Header
// and Query is set.
type Injection struct {
	// Header: the request header the value goes in, with Format, where
	// "{}" is the value: Header "Authorization", Format "Bearer {}".
	// The server sends the placeholder there; the proxy replaces it.
	Header string `json:"header,omitempty"`
	Format string `json:"format,omitempty"`
	// Query: a URL query parameter holding the value, for the APIs that
	// take it there.
	Query string `json:"query,omitempty"`
}
