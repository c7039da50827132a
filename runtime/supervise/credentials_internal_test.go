package supervise

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

const realValue = "ghp_R3alT0kenValue0123456789abcdefABCD"

func grant(from credential.Source) credential.Grant {
	return credential.Grant{Name: "GITHUB_TOKEN", Field: "servers.gh.credentials.GITHUB_TOKEN", From: from,
		To: []string{"api.github.com:443"}, As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}}
}

// TestCredentialValue: each source read at spawn, and each refusal
// naming the credential, its field and what to do.
func TestCredentialValue(t *testing.T) {
	for _, c := range []struct {
		name    string
		from    credential.Source
		environ []string
		want    string // the value, or the refusal's words
		fails   bool
	}{
		{"env of the grant's name", credential.Source{}, []string{"GITHUB_TOKEN=" + realValue}, realValue, false},
		{"env of another name, the last value", credential.Source{Env: "GH_PAT"}, []string{"GH_PAT=old", "GH_PAT=" + realValue}, realValue, false},
		{"env missing", credential.Source{}, []string{"OTHER=x"}, "GITHUB_TOKEN is not set: set it in the launch environment or the env file", true},
		{"env empty", credential.Source{Env: "GH_PAT"}, []string{"GH_PAT="}, "GH_PAT is not set", true},
		{"command", credential.Source{Command: []string{"printf", "%s\n", realValue}}, nil, realValue, false},
		{"command fails", credential.Source{Command: []string{"sh", "-c", "echo locked >&2; exit 3"}}, nil, "sh: exit status 3: locked", true},
		{"command fails silently", credential.Source{Command: []string{"sh", "-c", "exit 3"}}, nil, "): sh: exit status 3$", true},
		{"command prints nothing", credential.Source{Command: []string{"true"}}, nil, "true printed nothing", true},
		{"command floods", credential.Source{Command: []string{"head", "-c", "100000", "/dev/zero"}}, nil, "printed more than 16384 bytes", true},
		{"command missing", credential.Source{Command: []string{"/nonexistent/op", "read"}}, nil, "/nonexistent/op: fork/exec /nonexistent/op: no such file or directory$", true},
		{"a line break inside", credential.Source{Command: []string{"printf", "a\nb\n"}}, nil, "control character at byte 1", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			creds, err := ReadCredentials("gh", []credential.Grant{grant(c.from)}, c.environ)
			if c.fails {
				want, whole := strings.CutSuffix(c.want, "$") // $: the refusal ends there
				if err == nil || !strings.Contains(err.Error(), want) || whole && !strings.HasSuffix(err.Error(), want) || !strings.Contains(err.Error(), `server "gh": credential GITHUB_TOKEN (servers.gh.credentials.GITHUB_TOKEN)`) {
					t.Fatalf("got %v, want a refusal saying %q", err, c.want)
				}
				if strings.Contains(err.Error(), realValue) {
					t.Errorf("the refusal holds the value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if creds[0].Value != c.want || creds[0].Placeholder == c.want || len(creds[0].Placeholder) != len(c.want) {
				t.Errorf("value %q placeholder %q", creds[0].Value, creds[0].Placeholder)
			}
		})
	}
}

// TestCredentialCommandBounded: a command that never ends (a keychain
// prompt nobody answers) is ended, and says so.
func TestCredentialCommandBounded(t *testing.T) {
	defer func(d time.Duration) { credentialCommandTimeout = d }(credentialCommandTimeout)
	credentialCommandTimeout = 200 * time.Millisecond
	_, err := ReadCredentials("gh", []credential.Grant{grant(credential.Source{Command: []string{"sleep", "30"}})}, nil)
	if err == nil || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatalf("got %v", err)
	}
}

// TestCheckCredentials: no proxy, no credential: a plan without an
// allowlist, or a backend whose server the proxy does not front, is
// refused before anything starts.
func TestCheckCredentials(t *testing.T) {
	p := &compiler.Plan{Server: "gh"}
	gs := []credential.Grant{grant(credential.Source{})}
	if err := checkCredentials(p, gs, artefact.Bwrap, "bwrap"); err == nil || !strings.Contains(err.Error(), "no network allowlist") {
		t.Errorf("no allowlist: %v", err)
	}
	p.Network.Mode = "allowlist"
	for _, sb := range []artefact.Sandbox{artefact.Bwrap, artefact.Engine} {
		if err := checkCredentials(p, gs, sb, "x"); err != nil {
			t.Errorf("%v: %v", sb, err)
		}
	}
	if err := checkCredentials(p, gs, artefact.Seatbelt, "seatbelt"); err == nil || !strings.Contains(err.Error(), "under seatbelt the value would have to enter the sandbox") {
		t.Errorf("seatbelt: %v", err)
	}
	if err := checkCredentials(&compiler.Plan{}, nil, artefact.Seatbelt, "seatbelt"); err != nil {
		t.Errorf("no credentials: %v", err)
	}
}

// TestCredentialEnviron: the sandbox's environment has the placeholder
// under the grant's name and the trust variables, and the value under no
// name (its source's name included).
func TestCredentialEnviron(t *testing.T) {
	c := &credentials{env: []string{"GITHUB_TOKEN=ph", "SSL_CERT_FILE=" + CABundle}, hide: map[string]bool{"GITHUB_TOKEN": true, "GH_PAT": true, "SSL_CERT_FILE": true}}
	got := c.environ([]string{"PATH=/bin", "GITHUB_TOKEN=" + realValue, "GH_PAT=" + realValue, "SSL_CERT_FILE=/etc/x"})
	want := []string{"PATH=/bin", "GITHUB_TOKEN=ph", "SSL_CERT_FILE=" + CABundle}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if n := c.names([]string{"PATH", "SSL_CERT_FILE"}); !slices.Equal(n, []string{"PATH", "SSL_CERT_FILE", "GITHUB_TOKEN"}) {
		t.Errorf("names %q", n)
	}
	var none *credentials
	if got := none.environ([]string{"A=1"}); !slices.Equal(got, []string{"A=1"}) {
		t.Errorf("no credentials: %q", got)
	}
}
