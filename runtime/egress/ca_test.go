package egress

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rder, _ := x509.MarshalPKCS8PrivateKey(rk)
	refuse("an RSA key", cert, pemBlock("PRIVATE KEY", rder), "is rsa.PrivateKey, not ECDSA")

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

// TestSessionCAForAddresses: a session CA whose credentials are bound to
// addresses alone vouches for no host name (RFC 5280 leaves a name form
// no subtree lists unconstrained: without a DNS subtree, its key signed
// for any host the sandbox's clients then accepted), still for its
// addresses, in Go and in OpenSSL (which checks a leaf's common name as a
// host name: the address leaves have none); a given CA that leaves host
// names open is refused.
func TestSessionCAForAddresses(t *testing.T) {
	ca, err := newSessionCA([]string{"10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	sign := func(tmpl *x509.Certificate) *x509.Certificate {
		tmpl.SerialNumber, tmpl.NotBefore, tmpl.NotAfter = big.NewInt(2), ca.cert.NotBefore, ca.cert.NotAfter
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(der)
		return c
	}
	evil := sign(&x509.Certificate{Subject: pkix.Name{CommonName: "evil.example.com"}, DNSNames: []string{"evil.example.com"}})
	if _, err := evil.Verify(x509.VerifyOptions{Roots: roots, DNSName: "evil.example.com"}); err == nil {
		t.Error("the CA of an address vouches for evil.example.com")
	}
	lc, err := ca.leaf("10.0.0.5")
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(lc.Certificate[0])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "10.0.0.5"}); err != nil {
		t.Errorf("the address's own leaf: %v", err)
	}
	if openssl, err := exec.LookPath("openssl"); err == nil {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM(), 0o600)
		verify := func(c *x509.Certificate, args ...string) error {
			os.WriteFile(filepath.Join(dir, "leaf.pem"), pemBlock("CERTIFICATE", c.Raw), 0o600)
			out, err := exec.Command(openssl, append(append([]string{"verify", "-CAfile", filepath.Join(dir, "ca.pem")}, args...), filepath.Join(dir, "leaf.pem"))...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%v: %s", err, out)
			}
			return nil
		}
		if err := verify(leaf, "-verify_ip", "10.0.0.5"); err != nil {
			t.Errorf("openssl refuses the address's own leaf: %v", err)
		}
		if err := verify(evil, "-verify_hostname", "evil.example.com"); err == nil {
			t.Error("openssl takes evil.example.com from the CA of an address")
		}
	}

	// A CA given for addresses whose DNS names are left open.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	open := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: "open"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true, PermittedDNSDomainsCritical: true,
		PermittedIPRanges: []*net.IPNet{{IP: net.ParseIP("10.0.0.5").To4(), Mask: net.CIDRMask(32, 32)}}}
	der, err := x509.CreateCertificate(rand.Reader, open, open, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	k8, _ := x509.MarshalPKCS8PrivateKey(key)
	if _, err := loadSessionCA(pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", k8), []string{"10.0.0.5"}); err == nil || !strings.Contains(err.Error(), "does not refuse every host name") {
		t.Errorf("a CA leaving host names open: %v", err)
	}
	cert, pk, err := GenerateCA([]string{"10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadSessionCA(cert, pk, []string{"10.0.0.5"}); err != nil {
		t.Errorf("GenerateCA's CA for an address: %v", err)
	}
	if _, err := loadSessionCA(cert, pk, []string{"10.0.0.6"}); err == nil || !strings.Contains(err.Error(), "vouches for 10.0.0.5, the credentials' hosts are 10.0.0.6") {
		t.Errorf("the CA of another address: %v", err)
	}
}

// TestLoadSessionCABounds: a given CA that holds longer than the ones
// GenerateCA makes, or may sign other CAs, is refused.
func TestLoadSessionCABounds(t *testing.T) {
	hosts := []string{"api.github.com"}
	mk := func(edit func(*x509.Certificate)) ([]byte, []byte) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(caLifetime),
			KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true,
			PermittedDNSDomainsCritical: true, PermittedDNSDomains: hosts,
			ExcludedIPRanges: []*net.IPNet{{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, {IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}}
		edit(tmpl)
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		k8, _ := x509.MarshalPKCS8PrivateKey(key)
		return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", k8)
	}
	cert, key := mk(func(*x509.Certificate) {})
	if _, err := loadSessionCA(cert, key, hosts); err != nil {
		t.Fatalf("a CA as GenerateCA makes it: %v", err)
	}
	for _, c := range []struct {
		name string
		edit func(*x509.Certificate)
		want string
	}{
		{"ten years", func(c *x509.Certificate) { c.NotAfter = time.Now().AddDate(10, 0, 0) }, "days, more than 366"},
		{"any path length", func(c *x509.Certificate) { c.MaxPathLenZero = false; c.MaxPathLen = -1 }, "may sign other CAs"},
		{"path length 2", func(c *x509.Certificate) { c.MaxPathLenZero = false; c.MaxPathLen = 2 }, "may sign other CAs"},
	} {
		cert, key := mk(c.edit)
		if _, err := loadSessionCA(cert, key, hosts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
