package egress

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// TestUseCA: a proxy given a CA made by GenerateCA for its credentials'
// hosts intercepts with it (a client trusting that CA alone reaches the
// bound upstream, which receives the value); a CA that is not for
// exactly those hosts, not a CA, or whose key is another's is refused.
func TestUseCA(t *testing.T) {
	seen := &seen{}
	b := httptest.NewTLSServer(reflecting(seen))
	t.Cleanup(b.Close)
	bound := b.Listener.Addr().String() // 127.0.0.1:PORT: an address host
	allow, err := allowlist.Parse([]string{bound})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(b.Certificate())
	creds := []Credential{{
		Grant: credential.Grant{Name: "GITHUB_TOKEN", To: []string{bound}, As: credential.Injection{Header: "Authorization", Format: "Bearer {}"}},
		Value: testValue, Placeholder: testPlaceholder,
	}}
	if got := CredentialHosts(creds); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Fatalf("CredentialHosts: %q", got)
	}
	cert, key, err := GenerateCA(CredentialHosts(creds))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(key, []byte("PRIVATE KEY")) || bytes.Contains(cert, []byte("PRIVATE")) {
		t.Fatalf("GenerateCA's PEM blocks: cert %q key %q", cert[:30], key[:30])
	}

	refuse := func(name string, cert, key []byte, want string) {
		t.Helper()
		p := &Proxy{Allow: allow, Credentials: creds}
		if err := p.UseCA(cert, key); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: UseCA: %v, want an error saying %q", name, err, want)
		}
	}
	wider, wkey, _ := GenerateCA([]string{"127.0.0.1", "api.github.com"})
	refuse("a CA for more hosts", wider, wkey, "vouches for api.github.com, 127.0.0.1")
	other, okey, _ := GenerateCA([]string{"api.github.com"})
	refuse("a CA for another host", other, okey, "the credentials' hosts are 127.0.0.1")
	refuse("another CA's key", cert, okey, "not the key of its certificate")
	refuse("a key for a certificate", key, key, "not a PEM CERTIFICATE")
	refuse("a certificate for a key", cert, cert, "not a PEM PRIVATE KEY")
	leaf, err := newSessionCA([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	lc, err := leaf.leaf("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	lkey, _ := x509.MarshalPKCS8PrivateKey(leaf.leafKey)
	refuse("a leaf", pemBlock("CERTIFICATE", lc.Certificate[0]), pemBlock("PRIVATE KEY", lkey), "not a CA's")

	p := &Proxy{Allow: allow, Log: &bytes.Buffer{}, UpstreamRoots: roots, Credentials: creds}
	if err := p.UseCA(cert, key); err != nil {
		t.Fatal(err)
	}
	if got, _ := p.CACert(); !bytes.Equal(got, cert) {
		t.Fatal("CACert is not the CA given")
	}
	if err := p.UseCA(cert, key); err == nil {
		t.Error("a second UseCA was taken")
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	trust := x509.NewCertPool()
	trust.AppendCertsFromPEM(cert)
	u, _ := url.Parse(srv.URL)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: trust}}}
	t.Cleanup(c.CloseIdleConnections)
	req, _ := http.NewRequest("GET", "https://"+bound+"/", nil)
	req.Header.Set("Authorization", "Bearer "+testPlaceholder)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := seen.all(); !strings.Contains(got, "Bearer "+testValue) {
		t.Errorf("the bound upstream received:\n%s", got)
	}
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
