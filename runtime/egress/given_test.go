package egress

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
		// Allowed, but never matched by the proxy as spelt: refused, not silently idle.
		{"a trailing dot", nil, credential.Grant{Name: "GITHUB_TOKEN", To: []string{"api.github.com.:443"}, As: grant.As}, `write "api.github.com:443"`},
		{"a port of four digits", nil, credential.Grant{Name: "GITHUB_TOKEN", To: []string{"api.github.com:0443"}, As: grant.As}, `write "api.github.com:443"`},
		{"capitals", nil, credential.Grant{Name: "GITHUB_TOKEN", To: []string{"API.github.com:443"}, As: grant.As}, `write "api.github.com:443"`},
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

// TestLoadCredentialsFIFO: a FIFO where a value or the CA is expected is
// refused at once; opened blocking, it held the proxy's start until
// something wrote to it.
func TestLoadCredentialsFIFO(t *testing.T) {
	grant := credential.Grant{Name: "GITHUB_TOKEN", To: []string{"api.github.com:443"}, As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}}
	allow, _ := allowlist.Parse([]string{"api.github.com:443"})
	for _, name := range []string{"GITHUB_TOKEN", credential.PlaceholderFile("GITHUB_TOKEN"), credential.CAKeyFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cert, key, err := GenerateCA([]string{"api.github.com"})
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range map[string]string{"GITHUB_TOKEN": testValue, "GITHUB_TOKEN.placeholder": testPlaceholder,
				credential.CACertFile: string(cert), credential.CAKeyFile: string(key)} {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o400); err != nil {
					t.Fatal(err)
				}
			}
			os.Remove(filepath.Join(dir, name))
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() { done <- (&Proxy{Allow: allow}).LoadCredentials(dir, []credential.Grant{grant}) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "not a regular file") {
					t.Errorf("LoadCredentials: %v, want a refusal of the FIFO", err)
				}
			case <-time.After(5 * time.Second):
				// Unblock the open so the goroutine ends.
				if f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY, 0); err == nil {
					f.Close()
				}
				t.Fatal("LoadCredentials blocked on a FIFO")
			}
		})
	}
}
