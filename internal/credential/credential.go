// Package credential is the data of a credential grant (issue 41): a
// secret the server may use but never hold. The policy names where its
// value comes from at spawn and the destinations it may be sent to, and
// how; the server is given a placeholder, and the egress proxy, outside
// the sandbox, puts the real value in its place on requests to those
// destinations alone. The compiler fills Grant; the proxy (runtime/egress)
// and the launch paths (runtime/supervise) enforce it. Plain data and its
// checks: no I/O.
package credential

import (
	"fmt"
	"net"
	"net/textproto"
	"strings"
)

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

// Check refuses a grant the compiler would not have made: for a grant
// that reaches the proxy from outside a plan (the egress-proxy command's
// flags). The destinations' admission by an allowlist is the caller's.
func (g Grant) Check() error {
	if !envName(g.Name) {
		return fmt.Errorf("credential %q: a name is an environment variable's, [A-Za-z_][A-Za-z0-9_]*", g.Name)
	}
	if len(g.To) == 0 {
		return fmt.Errorf("credential %s: no destination", g.Name)
	}
	for _, to := range g.To {
		host, port, err := net.SplitHostPort(to)
		if err != nil || host == "" || port == "" || strings.Contains(host, "*") {
			return fmt.Errorf("credential %s: destination %q: want host:port, no wildcard", g.Name, to)
		}
	}
	in := g.As
	switch {
	case (in.Header == "") == (in.Query == ""):
		return fmt.Errorf("credential %s: give a header or a query parameter, one of them", g.Name)
	case in.Header != "" && (!token(in.Header) || strings.Count(in.Format, "{}") != 1 || strings.ContainsFunc(in.Format, ctl)):
		return fmt.Errorf("credential %s: header %q with format %q: want a header name and a format holding \"{}\" once", g.Name, in.Header, in.Format)
	case in.Header != "" && UnsettableHeader(in.Header):
		return fmt.Errorf("credential %s: header %s frames the request or speaks to a proxy: a credential cannot go there", g.Name, in.Header)
	case in.Query != "" && (in.Format != "" || strings.ContainsFunc(in.Query, func(r rune) bool { return ctl(r) || strings.ContainsRune("&=#? %+", r) })):
		return fmt.Errorf("credential %s: query parameter %q: want a parameter name, no format", g.Name, in.Query)
	}
	return nil
}

// unsettableHeaders frame the request or speak to a proxy: a credential
// in one of them would change how the request is read, not what it
// authenticates (and the proxy drops Proxy-Authorization).
var unsettableHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true,
	"Proxy-Connection": true, "Proxy-Authorization": true, "Te": true, "Trailer": true, "Upgrade": true,
}

// UnsettableHeader reports whether a credential may not go in header
// name (any case).
func UnsettableHeader(name string) bool {
	return unsettableHeaders[textproto.CanonicalMIMEHeaderKey(name)]
}

func ctl(r rune) bool { return r < 0x20 || r == 0x7f }

func envName(s string) bool {
	for i, r := range s {
		if !(r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || i > 0 && '0' <= r && r <= '9') {
			return false
		}
	}
	return s != ""
}

// token: an HTTP header name (RFC 9110's tchar).
func token(s string) bool {
	for _, r := range s {
		if !(r < 0x7f && r > 0x20 && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)) {
			return false
		}
	}
	return s != ""
}
