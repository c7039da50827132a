package egress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// TestLoadCredentials: the files a Secret holds (values, placeholders,
// the session CA) give the proxy its credentials; what does not fit (a
// placeholder of another shape, a grant off the allowlist, a CA for
// other hosts, a missing file) is refused, naming the credential.
func TestLoadCredentials(t *testing.T) {
	grant := credential.Grant{Name: "GITHUB_TOKEN", To: []string{"api.github.com:443"}, As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}}
	allow, _ := allowlist.Parse([]string{"api.github.com:443", "*.example.com:443"})
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		cert, key, err := GenerateCA([]string{"api.github.com"})
		if err != nil {
			t.Fatal(err)
		}
		all := map[string]string{"GITHUB_TOKEN": testValue + "\n", "GITHUB_TOKEN.placeholder": testPlaceholder,
			credential.CACertFile: string(cert), credential.CAKeyFile: string(key)}
		for k, v := range files {
			all[k] = v
		}
		for k, v := range all {
			if v == "-" {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o400); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	p := &Proxy{Allow: allow}
	if err := p.LoadCredentials(write(t, nil), []credential.Grant{grant}); err != nil {
		t.Fatal(err)
	}
	if len(p.Credentials) != 1 || p.Credentials[0].Value != testValue || p.Credentials[0].Placeholder != testPlaceholder {
		t.Fatalf("credentials: %+v", p.Credentials)
	}
	other, okey, _ := GenerateCA([]string{"evil.example.com"})
	for _, c := range []struct {
		name  string
		files map[string]string
		grant credential.Grant
		want  string
	}{
		{"placeholder of another length", map[string]string{"GITHUB_TOKEN.placeholder": testPlaceholder + "x"}, grant, "has the value's shape"},
		{"placeholder is the value", map[string]string{"GITHUB_TOKEN.placeholder": testValue}, grant, "is the value"},
		{"no value", map[string]string{"GITHUB_TOKEN": "-"}, grant, "GITHUB_TOKEN: open"},
		{"no CA key", map[string]string{credential.CAKeyFile: "-"}, grant, "session-ca.key"},
		{"a CA for another host", map[string]string{credential.CACertFile: string(other), credential.CAKeyFile: string(okey)}, grant, "vouches for evil.example.com"},
		{"off the allowlist", nil, credential.Grant{Name: "GITHUB_TOKEN", To: []string{"api.github.com:8443"}, As: grant.As}, "not a host the allowlist allows"},
		{"a wildcard", nil, credential.Grant{Name: "GITHUB_TOKEN", To: []string{"*.example.com:443"}, As: grant.As}, "no wildcard"},
		{"no injection", nil, credential.Grant{Name: "GITHUB_TOKEN", To: grant.To}, "one of them"},
		{"a bad name", nil, credential.Grant{Name: "GITHUB-TOKEN", To: grant.To, As: grant.As}, "environment variable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &Proxy{Allow: allow}
			err := p.LoadCredentials(write(t, c.files), []credential.Grant{c.grant})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("LoadCredentials: %v, want %q", err, c.want)
			}
			if err == nil {
				return
			}
			// What the Secret holds that does not fit: say how to make it again.
			redraw := strings.Contains(err.Error(), "print them again from the policy this manifest was built from, apply them, and restart both Pods")
			if files := c.files != nil; redraw != files {
				t.Errorf("LoadCredentials: %v: says to print the objects again %v, want %v", err, redraw, files)
			}
		})
	}
}
