package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"time"
)

// sessionCA is the certificate authority of one proxy: generated in
// memory when the proxy first needs it, its key never written anywhere,
// and allowed (name constraints) to vouch for the credentials' hosts
// alone, so that even its key would sign nothing else a client accepts.
type sessionCA struct {
	cert    *x509.Certificate
	der     []byte
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey // one key for every leaf: a session has few

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// caLifetime is how long the session's certificates hold: longer than
// any session (a desktop client keeps its servers for days), and
// worthless once the proxy's memory is gone.
const caLifetime = 366 * 24 * time.Hour

// noHostNames is the domain a CA for addresses alone is permitted: with no
// DNS subtree its constraints would leave every host name open (RFC 5280
// constrains only the name forms it lists), and .invalid (RFC 6761) names
// nothing that resolves.
const noHostNames = "invalid"

func newSessionCA(hosts []string) (*sessionCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial,
		Subject:                     pkix.Name{CommonName: "mcpolicy egress session CA " + serial.Text(16)[:8], Organization: []string{"mcpolicy"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(caLifetime),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			bits := 8 * len(ip.To16())
			if ip4 := ip.To4(); ip4 != nil {
				ip, bits = ip4, 32
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, h)
	}
	if len(tmpl.PermittedIPRanges) == 0 { // no address at all, rather than any
		tmpl.ExcludedIPRanges = []*net.IPNet{{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}, {IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}}
	}
	if len(tmpl.PermittedDNSDomains) == 0 { // no host name at all, rather than any
		tmpl.PermittedDNSDomains = []string{noHostNames}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &sessionCA{cert: cert, der: der, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{}}, nil
}

// GenerateCA makes a session CA for hosts, as a proxy makes its own, and
// returns its certificate and its key (PKCS #8), PEM-encoded: for a proxy
// that is given its CA (Proxy.UseCA) because the sandbox must trust it
// before the proxy starts. Whoever holds the key can vouch for hosts
// alone (name constraints).
func GenerateCA(hosts []string) (certPEM, keyPEM []byte, err error) {
	ca, err := newSessionCA(hosts)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(ca.key)
	if err != nil {
		return nil, nil, err
	}
	return ca.PEM(), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// loadSessionCA is the CA of certPEM and keyPEM, refused unless it is a
// CA whose key matches and whose name constraints let it vouch for hosts
// and nothing else: a CA given to the proxy must not be wider than the
// one it would have made (a stolen key would then sign for any host the
// sandbox's clients trust it for).
func loadSessionCA(certPEM, keyPEM []byte, hosts []string) (*sessionCA, error) {
	cb, _ := pem.Decode(certPEM)
	if cb == nil || cb.Type != "CERTIFICATE" {
		return nil, errors.New("the session CA's certificate is not a PEM CERTIFICATE")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the session CA's certificate: %v", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil || kb.Type != "PRIVATE KEY" {
		return nil, errors.New("the session CA's key is not a PEM PRIVATE KEY (PKCS #8)")
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the session CA's key: %v", err)
	}
	key, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("the session CA's key is %s, not ECDSA (mcpolicy credentials makes an ECDSA P-256 one)", strings.TrimPrefix(fmt.Sprintf("%T", k), "*"))
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("the session CA's key is not the key of its certificate")
	}
	if !cert.IsCA || !cert.BasicConstraintsValid || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, errors.New("the session CA's certificate is not a CA's")
	}
	if err := checkConstraints(cert, hosts); err != nil {
		return nil, fmt.Errorf("the session CA: %v", err)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("the session CA expired on %s", cert.NotAfter.Format(time.DateOnly))
	}
	// No longer, and no deeper, than GenerateCA makes it: its key sits in
	// a Secret for as long as it holds, and signs leaves alone.
	if life := cert.NotAfter.Sub(cert.NotBefore); life > caLifetime+2*time.Hour {
		return nil, fmt.Errorf("the session CA holds for %d days, more than %d (make it again)", int(life.Hours()/24), int(caLifetime.Hours()/24))
	}
	if cert.MaxPathLen != 0 || !cert.MaxPathLenZero {
		return nil, errors.New("the session CA may sign other CAs: its path length must be 0 (make it again)")
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return &sessionCA{cert: cert, der: cb.Bytes, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{}}, nil
}

// checkConstraints: cert's critical name constraints permit exactly the
// names and addresses of hosts, no address at all when hosts has none and
// no host name (noHostNames) when it has addresses alone, as
// newSessionCA makes them.
func checkConstraints(cert *x509.Certificate, hosts []string) error {
	var names, addrs []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			addrs = append(addrs, ip.String())
		} else {
			names = append(names, strings.ToLower(h))
		}
	}
	var gotNames, gotAddrs []string
	for _, d := range cert.PermittedDNSDomains {
		gotNames = append(gotNames, strings.ToLower(d))
	}
	for _, r := range cert.PermittedIPRanges {
		if ones, bits := r.Mask.Size(); ones != bits {
			return fmt.Errorf("it permits the range %s, not one address", r)
		}
		gotAddrs = append(gotAddrs, r.IP.String())
	}
	slices.Sort(names)
	slices.Sort(addrs)
	slices.Sort(gotNames)
	slices.Sort(gotAddrs)
	wantNames := names
	if len(names) == 0 {
		wantNames = []string{noHostNames}
	}
	switch {
	case !cert.PermittedDNSDomainsCritical:
		return errors.New("its name constraints are missing or not critical")
	case len(names) == 0 && len(gotNames) == 0:
		return fmt.Errorf("it does not refuse every host name (the credentials' hosts are addresses: its DNS constraints must permit %s alone)", noHostNames)
	case !slices.Equal(wantNames, gotNames) || !slices.Equal(addrs, gotAddrs):
		if len(names) == 0 {
			gotNames = slices.DeleteFunc(gotNames, func(n string) bool { return n == noHostNames }) // not a host
		}
		return fmt.Errorf("it vouches for %s, the credentials' hosts are %s",
			strings.Join(append(gotNames, gotAddrs...), ", "), strings.Join(append(names, addrs...), ", "))
	case len(addrs) == 0 && !excludesAllAddrs(cert):
		return errors.New("it does not exclude every address")
	}
	return nil
}

func excludesAllAddrs(cert *x509.Certificate) bool {
	v4, v6 := false, false
	for _, r := range cert.ExcludedIPRanges {
		if ones, _ := r.Mask.Size(); ones == 0 {
			if r.IP.To4() != nil {
				v4 = true
			} else {
				v6 = true
			}
		}
	}
	return v4 && v6
}

// PEM is the CA's certificate, the public part alone.
func (ca *sessionCA) PEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.der})
}

// leaf is the certificate the proxy shows the server for host, made once.
func (ca *sessionCA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c := ca.leaves[host]; c != nil {
		return c, nil
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		// No common name: OpenSSL checks one that looks like a host name
		// ("10.0.0.5" does) against the DNS constraints, which permit
		// .invalid alone when the hosts are addresses.
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.Subject = pkix.Name{CommonName: host}
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.der}, PrivateKey: ca.leafKey}
	ca.leaves[host] = c
	return c, nil
}
