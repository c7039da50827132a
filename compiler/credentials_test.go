package compiler

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/schema"
)

// compileServer compiles one server s of the body given (the fields
// between its braces).
func compileServer(t *testing.T, body string) (*Plan, error) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "mcpolicy.cue")
	src := "version: \"v1\"\nservers: s: {\n\tcommand: [\"x\"]\n" + body + "\n}\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	pol, err := schema.Load(file, root)
	if err != nil {
		return nil, err
	}
	plans, err := Compile([]*schema.Policy{pol}, Options{Root: root, Home: root})
	if err != nil {
		return nil, err
	}
	return plans[0], nil
}

func TestCredentialsLowered(t *testing.T) {
	p, err := compileServer(t, `	network: allow: ["api.github.com:443", "*.openai.com:443", "uploads.github.com:443"]
	credentials: {
		GITHUB_TOKEN: to: ["uploads.github.com:443", "API.GitHub.com:443"]
		OPENAI: {from: command: ["op", "read", "op://v/openai/key"], to: ["api.openai.com:443"], as: header: "x-api-key"}
		Q: {from: env: "Q_HOST", to: ["api.github.com:443"], as: query: "access_token"}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p.Credentials)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"name":"GITHUB_TOKEN","field":"servers.s.credentials.GITHUB_TOKEN","from":{"env":"GITHUB_TOKEN"},"to":["api.github.com:443","uploads.github.com:443"],"as":{"header":"Authorization","format":"Bearer {}"}},` +
		`{"name":"OPENAI","field":"servers.s.credentials.OPENAI","from":{"command":["op","read","op://v/openai/key"]},"to":["api.openai.com:443"],"as":{"header":"X-Api-Key","format":"{}"}},` +
		`{"name":"Q","field":"servers.s.credentials.Q","from":{"env":"Q_HOST"},"to":["api.github.com:443"],"as":{"query":"access_token"}}]`
	if string(b) != want {
		t.Errorf("credentials:\n got %s\nwant %s", b, want)
	}
	if got := GrantSummary(p.Grants()); got != "6 grants: 3 egress hosts, 3 credentials" {
		t.Errorf("grants: %s", got)
	}
	ex := Explain(p)
	for _, w := range []string{
		"credential  GITHUB_TOKEN: a placeholder; the real value (the launch's GITHUB_TOKEN, or the env file's) is injected by the proxy as Authorization: Bearer {} for api.github.com:443, uploads.github.com:443 only  (",
		"OPENAI: a placeholder; the real value (the output of `op read op://v/openai/key` run on the host at spawn) is injected by the proxy as X-Api-Key: {} for api.openai.com:443 only",
		"as query parameter access_token for api.github.com:443 only",
		"environment: only the credentials' placeholders",
	} {
		if !strings.Contains(ex, w) {
			t.Errorf("explain lacks %q:\n%s", w, ex)
		}
	}
	if got := p.CredentialSourceEnv(); !slices.Equal(got, []string{"GITHUB_TOKEN", "Q_HOST"}) {
		t.Errorf("source variables: %v", got)
	}
	if pos := p.CredentialPos["Q"].To["api.github.com:443"]; pos.Line != 8 {
		t.Errorf("Q's destination at %v", pos)
	}
}

// TestCredentialsAbsentKeepHash: a plan without credentials is the plan
// it was: no field in its JSON.
func TestCredentialsAbsentKeepHash(t *testing.T) {
	p, err := compileServer(t, `	network: allow: ["a.com:443"]`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(p.JSON()), "credentials") {
		t.Errorf("plan JSON names credentials:\n%s", p.JSON())
	}
	q, err := compileServer(t, `	network: allow: ["a.com:443"]
	credentials: A: to: ["a.com:443"]`)
	if err != nil {
		t.Fatal(err)
	}
	if p.Hash == q.Hash {
		t.Error("a credential does not change the plan's hash")
	}
}

// TestCredentialsRefused: each mistake at its field, with a hint.
func TestCredentialsRefused(t *testing.T) {
	const net = "\tnetwork: allow: [\"api.github.com:443\", \"*.x.org:443\"]\n"
	for _, c := range []struct{ body, want string }{
		{net + "\tcredentials: A: to: [\"uploads.github.com:443\"]",
			`mcpolicy.cue:5:23: servers.s.credentials.A.to[0]: uploads.github.com:443 is not allowed by network.allow`},
		{"\tcredentials: A: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:4:23: servers.s.credentials.A.to[0]: api.github.com:443 is not allowed by network.allow`},
		{net + "\tcredentials: A: to: [\"a.x.org:443\", \"A.x.org:443\"]",
			`mcpolicy.cue:5:38: servers.s.credentials.A.to[1]: destination "A.x.org:443" is listed twice (as "a.x.org:443")`},
		{net + "\tenv: [\"A\"]\n\tcredentials: A: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:6:15: servers.s.credentials.A: A is both passed through (env) and a credential: the value would enter the sandbox`},
		{net + "\tenv: [\"GH_PAT\"]\n\tcredentials: A: {from: env: \"GH_PAT\", to: [\"api.github.com:443\"]}",
			`servers.s.credentials.A.from.env: GH_PAT is both passed through (env) and the source of credential A: the value would enter the sandbox`},
		{net + "\tsetenv: A: \"1\"\n\tcredentials: A: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:6:15: servers.s.credentials.A: A is both set (setenv) and a credential`},
		{net + "\tcredentials: HTTPS_PROXY: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:5:15: servers.s.credentials.HTTPS_PROXY: HTTPS_PROXY cannot be a credential`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], from: {env: \"B\", command: [\"op\"]}}",
			`mcpolicy.cue:5:47: servers.s.credentials.A.from: from names both an env variable and a command`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: {header: \"X-Key\", query: \"k\"}}",
			`mcpolicy.cue:5:47: servers.s.credentials.A.as: as names both a header and a query parameter`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: {query: \"k\", format: \"x {}\"}}",
			`mcpolicy.cue:5:47: servers.s.credentials.A.as: as names both a header and a query parameter`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: {format: \"{} and {}\"}}",
			`mcpolicy.cue:5:47: servers.s.credentials.A.as.format: format "{} and {}" must hold "{}" once`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: {format: \"Bearer {}\\r\\nX-Evil: 1\"}}",
			`mcpolicy.cue:5:47: servers.s.credentials.A.as.format: format "Bearer {}\r\nX-Evil: 1" is not a short line of printable text`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: {header: \"host\"}}",
			`mcpolicy.cue:5:47: servers.s.credentials.A.as.header: Host frames the request or speaks to a proxy: a credential cannot go there`},
		// The trust variables are mcpolicy's with credentials: never a
		// credential, passed through or set (a Pod got two of one name).
		{net + "\tcredentials: SSL_CERT_FILE: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:5:15: servers.s.credentials.SSL_CERT_FILE: SSL_CERT_FILE cannot be a credential: with credentials mcpolicy sets it to /.mcpolicy/ca-bundle.pem, over the placeholder`},
		{net + "\tenv: [\"NODE_EXTRA_CA_CERTS\"]\n\tcredentials: A: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:5:8: servers.s.env: NODE_EXTRA_CA_CERTS is passed through, and mcpolicy sets it for the server's credentials`},
		{net + "\tsetenv: REQUESTS_CA_BUNDLE: \"/etc/ssl/mine.pem\"\n\tcredentials: A: to: [\"api.github.com:443\"]",
			`mcpolicy.cue:5:10: servers.s.setenv.REQUESTS_CA_BUNDLE: REQUESTS_CA_BUNDLE is set, and mcpolicy sets it for the server's credentials`},
		// The schema's own checks, through the same load.
		{net + "\tcredentials: A: to: [\"*.x.org:443\"]",
			`mcpolicy.cue:5:23: servers.s.credentials.A.to[0]: must be a non-empty list of "host:port" destinations, each also in network.allow and none a wildcard (a value is bound to named hosts), e.g. ["api.github.com:443"] (got "*.x.org:443")`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], from: command: []}",
			`mcpolicy.cue:5:53: servers.s.credentials.A.from.command: must be a non-empty argv of non-empty strings run on the host at spawn, e.g. ["op", "read", "op://vault/gh/token"] (got [])`},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: header: \"X Key\"}",
			"mcpolicy.cue:5:59: servers.s.credentials.A.as.header: must be a header name (an RFC 9110 token: letters, digits and !#$%&'*+-.^_`|~), e.g. \"Authorization\" (got \"X Key\")"},
		{net + "\tcredentials: A: {to: [\"api.github.com:443\"], as: format: \"Bearer\"}",
			`mcpolicy.cue:5:59: servers.s.credentials.A.as.format: must be the header's value with "{}" where the credential goes, e.g. "Bearer {}" (got "Bearer")`},
		{net + "\tcredentials: \"gh-token\": to: [\"api.github.com:443\"]",
			`mcpolicy.cue:5:15: servers.s.credentials."gh-token": "gh-token" is not an environment variable name`},
	} {
		_, err := compileServer(t, c.body)
		if err == nil {
			t.Errorf("%s: compiled", c.body)
			continue
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		if !strings.HasSuffix(first, c.want) {
			t.Errorf("%s:\n got %s\nwant %s", c.body, first, c.want)
		}
		if !strings.Contains(err.Error(), "hint: ") && !strings.Contains(c.want, ": must be") {
			t.Errorf("%s: no hint:\n%s", c.body, err)
		}
	}
}

// TestTrustVariablesWithoutCredentials: a server without credentials
// passes or sets the trust variables as it likes.
func TestTrustVariablesWithoutCredentials(t *testing.T) {
	if _, err := compileServer(t, "\tenv: [\"SSL_CERT_FILE\"]\n\tsetenv: NODE_EXTRA_CA_CERTS: \"/etc/ssl/mine.pem\""); err != nil {
		t.Error(err)
	}
}

// TestCredentialsJSONRoundTrip: a plan read back from its JSON (what
// mcpolicy run starts from) holds the same credentials and hashes the
// same; its grants fall back to the network's position.
func TestCredentialsJSONRoundTrip(t *testing.T) {
	p, err := compileServer(t, `	network: allow: ["a.com:443"]
	credentials: A: {to: ["a.com:443"], from: command: ["op", "read", "x"], as: query: "k"}`)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(p.JSON(), &back); err != nil {
		t.Fatal(err)
	}
	if string(back.JSON()) != string(p.JSON()) {
		t.Errorf("round trip changed the plan:\n%s\nwant\n%s", back.JSON(), p.JSON())
	}
	hash := back.Hash
	back.computeHash()
	if back.Hash != hash {
		t.Errorf("hash %s read back as %s", back.Hash, hash)
	}
	if gs := back.Grants(); len(gs) != 2 || gs[1].Kind != GrantCredential {
		t.Errorf("grants read back: %+v", gs)
	}
}

// TestExplainKubernetesProxy: on the kubernetes backend alone, explain
// names the egress-proxy Pod (no mcpolicy run, no loopback forwarder),
// the CA mcpolicy credentials draws, and a deny-all NetworkPolicy for
// network none; beside a local backend it says both.
func TestExplainKubernetesProxy(t *testing.T) {
	body := `	image: "x:1"
	backends: [%s]
	accept: ["kubernetes-host-users"]
	network: allow: ["api.github.com:443"]
	credentials: GITHUB_TOKEN: to: ["api.github.com:443"]`
	for _, c := range []struct {
		backends  string
		want, not []string
	}{
		{`"kubernetes"`,
			[]string{"checked by mcpolicy's egress proxy (the egress-proxy Pod, reached at its Service's port ", "under a CA drawn\n    by mcpolicy credentials)"},
			[]string{"mcpolicy run", "loopback", "at spawn)"}},
		{`"docker", "kubernetes"`,
			[]string{"(started by mcpolicy run; loopback port ", " in the sandbox; on kubernetes the egress-proxy Pod, reached at its Service's port ", "at spawn, on kubernetes drawn by mcpolicy credentials)"},
			nil},
		{`"docker"`,
			[]string{"(started by mcpolicy run; loopback port ", "under a CA made\n    at spawn)"},
			[]string{"kubernetes", "Pod"}},
	} {
		p, err := compileServer(t, strings.ReplaceAll(body, "%s", c.backends))
		if err != nil {
			t.Fatal(err)
		}
		ex := Explain(p)
		for _, w := range c.want {
			if !strings.Contains(ex, w) {
				t.Errorf("backends %s: explain lacks %q:\n%s", c.backends, w, ex)
			}
		}
		taken := ex[strings.Index(ex, "Taken away:"):]
		for _, w := range c.not {
			if strings.Contains(taken, w) {
				t.Errorf("backends %s: explain's Taken away says %q:\n%s", c.backends, w, taken)
			}
		}
	}
	p, err := compileServer(t, "\timage: \"x:1\"\n\tbackends: [\"kubernetes\"]")
	if err != nil {
		t.Fatal(err)
	}
	if ex := Explain(p); !strings.Contains(ex, "network: none (a deny-all NetworkPolicy)\n") {
		t.Errorf("network none on kubernetes:\n%s", ex)
	}
}

// TestSourceSummaryQuotes: a command's words are shown as a shell reads
// them back, one word each: sh -c 'echo a b', not sh -c echo a b.
func TestSourceSummaryQuotes(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"op", "read", "op://vault/uploads/key"}, "`op read op://vault/uploads/key`"},
		{[]string{"sh", "-c", "echo a b"}, "`sh -c 'echo a b'`"},
		{[]string{"printf", "%s", "it's"}, "`printf %s 'it'\\''s'`"},
	} {
		if got := SourceSummary(credential.Source{Command: c.argv}); !strings.Contains(got, c.want) {
			t.Errorf("%q: %s, want it to hold %s", c.argv, got, c.want)
		}
	}
}

// TestCredentialGrantInCluster: a server only a cluster runs has its
// values read by mcpolicy credentials into a Secret, not by a launch at
// spawn; a server also run locally keeps the launch's wording.
func TestCredentialGrantInCluster(t *testing.T) {
	for _, c := range []struct{ backends, want string }{
		{`["kubernetes"]`, "read by mcpolicy credentials from its environment's GITHUB_TOKEN, or its --env-file's, into a Secret the egress-proxy Pod alone mounts"},
		{`["kubernetes", "docker"]`, "the launch's GITHUB_TOKEN, or the env file's"},
	} {
		p, err := compileServer(t, `	image: "x:1"
	backends: `+c.backends+`
	accept: ["kubernetes-host-users"]
	network: allow: ["api.github.com:443"]
	credentials: GITHUB_TOKEN: to: ["api.github.com:443"]`)
		if err != nil {
			t.Fatal(err)
		}
		var text string
		for _, g := range p.Grants() {
			if g.Kind == GrantCredential {
				text = g.Summary
			}
		}
		if !strings.Contains(text, c.want) {
			t.Errorf("%s: %q, want %q", c.backends, text, c.want)
		}
	}
}
