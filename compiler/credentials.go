package compiler

import (
	"cmp"
	"fmt"
	"net/textproto"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/internal/position"
	"github.com/mcpolicy/mcpolicy/schema"
)

// The injection a credential gets when its policy says none: what most
// HTTP APIs take a token as.
const (
	DefaultCredentialHeader = "Authorization"
	DefaultCredentialFormat = "Bearer {}"
)

// MaxCredentialFormat bounds a header format: a prefix and the value.
const MaxCredentialFormat = 256

// CredentialPos are the positions of a plan's credentials by name: the
// entry's, and each destination's in the policy's order.
type CredentialPos struct {
	Entry position.Pos
	To    map[string]position.Pos // by canonical destination
}

// credentials lowers the credentials section, sorted by name (as the
// schema reads it): each bound to destinations the allowlist admits, by
// name, never a wildcard, and never also a variable passed through or set
// (which would put the value, or a second meaning, inside the sandbox).
func (c *compiler) credentials(s *schema.Server, at string, p *Plan) ([]credential.Grant, map[string]CredentialPos) {
	if len(s.Credentials) == 0 {
		return nil, nil
	}
	var out []credential.Grant
	pos := map[string]CredentialPos{}
	rules := p.Network.Rules()
	for _, sc := range s.Credentials {
		field := at + ".credentials." + schema.FieldPath(sc.Name)
		g := credential.Grant{Name: sc.Name, Field: field}
		switch {
		case slices.ContainsFunc(p.Env, func(e EnvGrant) bool { return e.Name == sc.Name }):
			c.fail(sc.Pos, field, fmt.Sprintf("drop %q from env: as a credential the server is given a placeholder, and the proxy injects the value", sc.Name),
				"%s is both passed through (env) and a credential: the value would enter the sandbox", sc.Name)
		case slices.ContainsFunc(p.SetEnv, func(e EnvValue) bool { return e.Name == sc.Name }):
			c.fail(sc.Pos, field, "keep one: setenv sets a constant, a credential holds a placeholder", "%s is both set (setenv) and a credential", sc.Name)
		case reservedEnv[sc.Name]:
			c.fail(sc.Pos, field, "mcpolicy sets it itself (the egress proxy's address, the plan's hash)", "%s cannot be a credential", sc.Name)
		case trustEnv[sc.Name] != "":
			c.fail(sc.Pos, field, "name the variable the server reads its token from", "%s cannot be a credential: with credentials mcpolicy sets it to %s, over the placeholder", sc.Name, trustEnv[sc.Name])
		}
		g.From = c.credentialSource(sc, field)
		// A source variable passed through too would hand the sandbox the
		// value under its own name (run withholds it: the policy would
		// say what does not happen).
		if src := g.From.Env; src != "" && src != sc.Name && slices.ContainsFunc(p.Env, func(e EnvGrant) bool { return e.Name == src }) {
			c.fail(sc.FromPos, field+".from.env", fmt.Sprintf("drop %q from env: it holds the value the proxy injects", src),
				"%s is both passed through (env) and the source of credential %s: the value would enter the sandbox", src, sc.Name)
		}
		cp := CredentialPos{Entry: sc.Pos, To: map[string]position.Pos{}}
		g.To = c.credentialDests(sc, field, rules, cp.To)
		g.As = c.credentialInjection(sc, field)
		out = append(out, g)
		pos[sc.Name] = cp
	}
	// The trust variables are mcpolicy's once there are credentials: a
	// value the policy passes or sets would be dropped (run) or left to
	// the runtime's choice between two of one name (a Pod).
	for _, e := range p.Env {
		if trustEnv[e.Name] != "" {
			c.fail(e.Pos, at+".env", fmt.Sprintf("drop %q from env: with credentials mcpolicy sets it to %s, for the session CA", e.Name, trustEnv[e.Name]),
				"%s is passed through, and mcpolicy sets it for the server's credentials", e.Name)
		}
	}
	for _, e := range p.SetEnv {
		if trustEnv[e.Name] != "" {
			c.fail(e.Pos, at+".setenv."+schema.FieldPath(e.Name), fmt.Sprintf("drop %q from setenv: with credentials mcpolicy sets it to %s, for the session CA", e.Name, trustEnv[e.Name]),
				"%s is set, and mcpolicy sets it for the server's credentials", e.Name)
		}
	}
	slices.SortStableFunc(out, func(a, b credential.Grant) int { return cmp.Compare(a.Name, b.Name) })
	return out, pos
}

// trustEnv are the variables that point TLS clients at the session CA
// (sandbox.TrustEnv), set by every backend for a server with credentials.
var trustEnv = func() map[string]string {
	m := map[string]string{}
	for _, kv := range sandbox.TrustEnv() {
		m[kv[0]] = kv[1]
	}
	return m
}()

// credentialSource is where the value comes from: the launch's variable
// of the credential's name by default.
func (c *compiler) credentialSource(sc schema.Credential, field string) credential.Source {
	field += ".from"
	switch {
	case sc.FromEnv != "" && sc.FromCommand != nil:
		c.fail(sc.FromPos, field, `write from: {env: "NAME"} or from: {command: [...]}`, "from names both an env variable and a command")
	case sc.FromCommand != nil:
		if len(sc.FromCommand) == 0 || slices.Contains(sc.FromCommand, "") {
			c.fail(sc.FromPos, field+".command", `write the argv that prints the value, e.g. ["op", "read", "op://vault/gh/token"]`, "the command is empty, or has an empty argument")
		}
		for _, a := range sc.FromCommand {
			if strings.ContainsRune(a, 0) {
				c.fail(sc.FromPos, field+".command", "an argument is a C string: it cannot hold NUL", "an argument of the command holds NUL")
			}
		}
		return credential.Source{Command: sc.FromCommand}
	case sc.FromEnv != "":
		return credential.Source{Env: sc.FromEnv}
	}
	return credential.Source{Env: sc.Name}
}

// credentialDests are the destinations, canonical and sorted: each
// "host:port" without a wildcard, each admitted by the allowlist.
func (c *compiler) credentialDests(sc schema.Credential, field string, rules allowlist.List, pos map[string]position.Pos) []string {
	var out []string
	for i, d := range sc.To {
		f, at := fmt.Sprintf("%s.to[%d]", field, i), sc.Pos
		if i < len(sc.ToPos) {
			at = sc.ToPos[i]
		}
		r, err := allowlist.ParseRule(d)
		if err != nil {
			c.fail(at, f, `write "host:port", e.g. "api.github.com:443"`, "%v", err)
			continue
		}
		if r.Wildcard {
			c.fail(at, f, "name each host the value may be sent to, e.g. \"api.github.com:443\"",
				"%s is a wildcard: a credential is bound to named hosts", d)
			continue
		}
		if _, ok := rules.Match(r.Host, r.Port); !ok {
			c.fail(at, f, fmt.Sprintf("add %q to network.allow, or bind the credential to a destination it allows", r.String()),
				"%s is not allowed by network.allow", r.String())
			continue
		}
		if _, dup := pos[r.String()]; dup {
			c.fail(at, f, "list each destination once", "destination %q is listed twice (as %q)", d, r.String())
			continue
		}
		pos[r.String()] = at
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

// credentialInjection is how the value is sent: a header with a format
// holding "{}" once, or a query parameter. No as: Authorization: Bearer
// {}; a header alone: the value as it is.
func (c *compiler) credentialInjection(sc schema.Credential, field string) credential.Injection {
	field += ".as"
	if sc.Query != "" {
		if sc.Header != "" || sc.Format != "" {
			c.fail(sc.AsPos, field, `write as: {header: "...", format: "..."} or as: {query: "..."}`, "as names both a header and a query parameter")
		}
		return credential.Injection{Query: sc.Query}
	}
	in := credential.Injection{Header: DefaultCredentialHeader, Format: sc.Format}
	if sc.Header != "" {
		in.Header = textproto.CanonicalMIMEHeaderKey(sc.Header)
		if !httpToken(sc.Header) {
			c.fail(sc.AsPos, field+".header", "a header name is an RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~", "%q is not a header name", sc.Header)
		}
	}
	if credential.UnsettableHeader(in.Header) {
		c.fail(sc.AsPos, field+".header", "name the header the API reads the credential from, e.g. Authorization or X-Api-Key", "%s frames the request or speaks to a proxy: a credential cannot go there", in.Header)
	}
	if in.Format == "" {
		in.Format = "{}"
		if in.Header == DefaultCredentialHeader {
			in.Format = DefaultCredentialFormat
		}
	}
	switch {
	case strings.Count(in.Format, "{}") != 1:
		c.fail(sc.AsPos, field+".format", `write the header's value with "{}" once where the credential goes, e.g. "Bearer {}"`, "format %q must hold \"{}\" once", in.Format)
	case len(in.Format) > MaxCredentialFormat || !printableLine(in.Format):
		c.fail(sc.AsPos, field+".format", "one short line of printable text: a header value", "format %q is not a short line of printable text", in.Format)
	}
	return in
}

// httpToken reports whether s is an RFC 9110 token (a header name).
func httpToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// CredentialSummary says where a credential's value comes from and where
// it may go: `GITHUB_TOKEN: a placeholder; the real value (the launch's
// GITHUB_TOKEN, or the env file's) is injected by the proxy as
// Authorization: Bearer {} for api.github.com:443 only`.
func CredentialSummary(g credential.Grant) string {
	return fmt.Sprintf("%s: a placeholder; the real value (%s) is injected by the proxy as %s for %s only",
		g.Name, SourceSummary(g.From), InjectionSummary(g.As), strings.Join(g.To, ", "))
}

// ClusterCredentialSummary is CredentialSummary for a server a cluster
// alone runs: mcpolicy credentials reads the value, where it runs, into
// a Secret the egress-proxy Pod alone mounts.
func ClusterCredentialSummary(g credential.Grant) string {
	from := "its environment's " + g.From.Env + ", or its --env-file's"
	if len(g.From.Command) > 0 {
		from = "the output of `" + ShellCommand(g.From.Command) + "`"
	}
	return fmt.Sprintf("%s: a placeholder; the real value (read by mcpolicy credentials from %s, into a Secret the egress-proxy Pod alone mounts) is injected by the proxy as %s for %s only",
		g.Name, from, InjectionSummary(g.As), strings.Join(g.To, ", "))
}

// inClusterOnly reports whether only clusters run the plan's server
// (every backend it lists): no mcpolicy run reads its values at spawn.
func (p *Plan) inClusterOnly() bool {
	return len(p.Backends) > 0 && !slices.ContainsFunc(p.Backends, func(b string) bool { return !backendtraits.InCluster(b) })
}

// SourceSummary says where the value is read at spawn.
func SourceSummary(s credential.Source) string {
	if len(s.Command) > 0 {
		return "the output of `" + ShellCommand(s.Command) + "` run on the host at spawn"
	}
	return "the launch's " + s.Env + ", or the env file's"
}

// ShellCommand is argv as a shell reads it back, each word quoted where
// it must be.
func ShellCommand(argv []string) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = shellWord(w)
	}
	return strings.Join(words, " ")
}

// InjectionSummary says how the value is sent.
func InjectionSummary(in credential.Injection) string {
	if in.Query != "" {
		return "query parameter " + in.Query
	}
	return in.Header + ": " + in.Format
}

// CredentialSourceEnv are the variables the launch reads credentials'
// values from (from: env, or the credential's own name), sorted, each
// once: a client entry passes them to the launch by reference, as it does
// env grants, and the launch never passes them into the sandbox.
func (p *Plan) CredentialSourceEnv() []string {
	var out []string
	for _, g := range p.Credentials {
		if g.From.Env != "" && !slices.Contains(out, g.From.Env) {
			out = append(out, g.From.Env)
		}
	}
	slices.Sort(out)
	return out
}

// shellWord quotes a command's word for a POSIX shell when it needs it, so
// that the argv shown reads back as the argv run: sh -c 'echo a b', not
// sh -c echo a b.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@+,%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
