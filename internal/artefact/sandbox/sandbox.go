// Package sandbox is the sandbox's side of egress: where the forwarder and
// the proxy's socket are bound inside, the forwarder's argv and the
// environment that points a server at it. Emitters write these into
// artefacts; the proxy itself (package egress) is not needed for that.
package sandbox

import "strconv"

// Inside a bwrap or container sandbox the network namespace is empty: the
// forwarder (mcpolicy itself, bound read-only) listens on loopback there
// and carries each connection to the proxy's unix socket, bound in from
// the host. These are their paths inside the sandbox.
const (
	Dir       = "/.mcpolicy"
	Forwarder = Dir + "/mcpolicy"
	Socket    = Dir + "/egress.sock"
)

// ForwardCommand is the argv that starts the forwarder in a sandbox; with
// lifeline it exits when the proxy goes away (a container sidecar has no
// parent to die with).
func ForwardCommand(port int, lifeline bool) []string {
	a := []string{Forwarder, "egress-forward", "--port", strconv.Itoa(port), "--socket", Socket}
	if lifeline {
		a = append(a, "--lifeline")
	}
	return a
}

// ProxyEnv is the environment that points a confined server at the proxy
// on 127.0.0.1:port, in the spellings programs read: curl and Python's
// urllib read the lower-case names (curl ignores upper-case HTTP_PROXY),
// Go libraries the upper-case ones; Node.js reads them only when
// NODE_USE_ENV_PROXY=1 (22.21 and 24.5 on; older versions ignore both and
// find no route). Loopback is never proxied: inside the sandbox nothing
// else listens there.
func ProxyEnv(port int) [][2]string {
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	const local = "localhost,127.0.0.1,::1"
	return [][2]string{
		{"HTTPS_PROXY", url}, {"HTTP_PROXY", url}, {"https_proxy", url}, {"http_proxy", url},
		{"NODE_USE_ENV_PROXY", "1"},
		{"NO_PROXY", local}, {"no_proxy", local},
	}
}

// Where a sandbox with credentials finds the session CA of the proxy that
// injects them (issue 41): the bundle (the CA and the host's roots) and
// the CA alone. Read-only, outside every grant.
const (
	CABundle  = Dir + "/ca-bundle.pem"
	SessionCA = Dir + "/session-ca.pem"
)

// TrustEnv points TLS clients at CABundle in the spellings they read: Go
// and OpenSSL (SSL_CERT_FILE), Python's requests, curl, git, Deno; and
// Node.js at SessionCA, which NODE_EXTRA_CA_CERTS adds to its own roots.
func TrustEnv() [][2]string {
	out := [][2]string{}
	for _, v := range []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "DENO_CERT"} {
		out = append(out, [2]string{v, CABundle})
	}
	return append(out, [2]string{"NODE_EXTRA_CA_CERTS", SessionCA})
}
