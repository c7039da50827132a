package supervise

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	inside "github.com/mcpolicy/mcpolicy/internal/artefact/sandbox"
	"github.com/mcpolicy/mcpolicy/internal/credential"
	"github.com/mcpolicy/mcpolicy/runtime/egress"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// Where the sandbox finds the session CA (inside.TrustEnv points TLS
// clients at them).
const (
	CABundle  = inside.CABundle
	SessionCA = inside.SessionCA
)

// A command that hangs (a keychain waiting for a prompt nobody answers)
// does not hold the start.
var credentialCommandTimeout = 30 * time.Second // a variable for its test

// hostRoots are where Linux distributions keep the system's CA bundle
// (crypto/x509's own list): the first found goes into the bundle beside
// the session CA, so the other hosts' TLS is verified as before.
var hostRoots = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/pki/tls/cacert.pem",
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// credentials is what a session with credential grants adds: the proxy's
// values and placeholders, the variables the sandbox gets (each
// placeholder under its grant's name, the trust variables) and the CA
// files bound into it.
type credentials struct {
	creds []egress.Credential
	env   []string // NAME=VALUE
	files []launch.DataFile
	// hide are the names whose host values the engine's client does not
	// pass on: the grants' names and their sources.
	hide map[string]bool
}

// checkCredentials refuses credential grants where no proxy can inject
// them: without an allowlist, or on a backend whose server this process
// does not confine with the proxy as its only way out.
func checkCredentials(p *compiler.Plan, grants []credential.Grant, sandbox artefact.Sandbox, backend string) error {
	if len(grants) == 0 {
		return nil
	}
	if p.Network.Mode != "allowlist" {
		return fmt.Errorf("server %q: credentials (%s) are injected by the egress proxy, and the server has no network allowlist: add its destinations to network.allow", p.Server, grants[0].Field)
	}
	if sandbox != artefact.Bwrap && sandbox != artefact.Engine {
		return fmt.Errorf("server %q: credentials (%s) are injected by mcpolicy run's egress proxy under bwrap, docker or podman; under %s the value would have to enter the sandbox: use one of those backends", p.Server, grants[0].Field, backend)
	}
	return nil
}

// ReadCredentials reads each grant's value, outside the sandbox (the
// launch environment, which holds the env file's values, or the grant's
// command), and draws its placeholder: at spawn, or where the values are
// put for a proxy that is given them (mcpolicy credentials).
func ReadCredentials(server string, grants []credential.Grant, environ []string) ([]egress.Credential, error) {
	var out []egress.Credential
	for _, g := range grants {
		v, err := credentialValue(g, environ)
		if err != nil {
			return nil, fmt.Errorf("server %q: credential %s (%s): %v", server, g.Name, g.Field, err)
		}
		ph, err := credential.Placeholder(v, rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("server %q: credential %s (%s): %v", server, g.Name, g.Field, err)
		}
		out = append(out, egress.Credential{Grant: g, Value: v, Placeholder: ph})
	}
	return out, nil
}

func credentialValue(g credential.Grant, environ []string) (string, error) {
	var v string
	if len(g.From.Command) > 0 {
		var err error
		if v, err = commandValue(g.From.Command); err != nil {
			return "", err
		}
	} else {
		name := g.From.Env
		if name == "" {
			name = g.Name
		}
		var ok bool
		if v, ok = lookupEnv(environ, name); !ok || v == "" {
			return "", fmt.Errorf("%s is not set: set it in the launch environment or the env file (--env-file); the server will get a placeholder, never the value", name)
		}
	}
	if err := credential.CheckValue(v); err != nil {
		return "", err
	}
	return v, nil
}

// lookupEnv is environ's last value of name (the one a process started
// with it would see).
func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// commandValue runs argv on the host, with this process's environment
// and no input, and returns its output less one trailing line break.
func commandValue(argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), credentialCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out := &capped{max: credential.MaxValue + 2}
	errOut := &capped{max: 512}
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s did not finish within %s", argv[0], credentialCommandTimeout)
	case out.over:
		return "", fmt.Errorf("%s printed more than %d bytes", argv[0], credential.MaxValue)
	case err != nil:
		if said := bytes.TrimSpace(errOut.b.Bytes()); len(said) > 0 {
			return "", fmt.Errorf("%s: %v: %s", argv[0], err, said)
		}
		return "", fmt.Errorf("%s: %v", argv[0], err)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(out.b.String(), "\n"), "\r")
	if v == "" {
		return "", fmt.Errorf("%s printed nothing", argv[0])
	}
	return v, nil
}

// capped keeps at most max bytes and notes more.
type capped struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); len(p) > room {
		c.b.Write(p[:max(room, 0)])
		c.over = true
		return len(p), nil
	}
	return c.b.Write(p)
}

// prepareCredentials reads the values, gives them to the proxy and
// makes what the sandbox gets. Called once the proxy exists.
func (s *session) prepareCredentials(grants []credential.Grant) error {
	creds, err := ReadCredentials(s.plan.Server, grants, s.opt.Environ)
	if err != nil {
		return err
	}
	s.proxy.Credentials, s.proxy.UpstreamRoots = creds, s.opt.UpstreamRoots
	ca, err := s.proxy.CACert()
	if err != nil {
		return fmt.Errorf("the egress proxy's session CA: %v", err)
	}
	bundle := TrustBundle(ca)
	c := &credentials{creds: creds, hide: map[string]bool{},
		files: []launch.DataFile{{Target: CABundle, Data: bundle}, {Target: SessionCA, Data: ca}}}
	for _, cr := range creds {
		c.env = append(c.env, cr.Grant.Name+"="+cr.Placeholder)
		c.hide[cr.Grant.Name] = true
		if cr.Grant.From.Env != "" {
			c.hide[cr.Grant.From.Env] = true
		}
	}
	for _, kv := range inside.TrustEnv() {
		c.env = append(c.env, kv[0]+"="+kv[1])
	}
	for _, kv := range c.env {
		name, _, _ := strings.Cut(kv, "=")
		c.hide[name] = true
	}
	s.creds = c
	return nil
}

// environ is environ with the credentials' names (and the trust
// variables) removed and the sandbox's values of them added.
func (c *credentials) environ(environ []string) []string {
	if c == nil {
		return environ
	}
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !c.hide[name] {
			out = append(out, kv)
		}
	}
	return append(out, c.env...)
}

// names are the variables the sandbox gets from environ (bwrap's spec,
// an engine's -e): names plus the credentials', once each.
func (c *credentials) names(names []string) []string {
	if c == nil {
		return names
	}
	out := slices.Clone(names)
	for _, kv := range c.env {
		if name, _, _ := strings.Cut(kv, "="); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// engineArgs inserts, after an engine's "run", the credentials' -e
// names and the CA files' bind mounts: written into dir (the session's
// own folder, outside every grant), mode 0444, bound read-only.
func (c *credentials) engineArgs(args []string, dir string) ([]string, error) {
	if c == nil {
		return args, nil
	}
	var extra []string
	for _, f := range c.files {
		host := filepath.Join(dir, filepath.Base(f.Target))
		if err := os.WriteFile(host, f.Data, 0o444); err != nil {
			return nil, err
		}
		extra = append(extra, "--mount", "type=bind,source="+host+",target="+f.Target+",readonly")
	}
	for _, kv := range c.env {
		name, _, _ := strings.Cut(kv, "=")
		extra = append(extra, "-e", name)
	}
	if len(args) == 0 {
		return nil, errors.New("no engine arguments")
	}
	return append(append([]string{args[0]}, extra...), args[1:]...), nil
}

// Given is what a proxy that is given its credentials rather than
// reading them at spawn needs, drawn ahead (mcpolicy credentials, for the
// kubernetes backend's egress-proxy Pod): each value and placeholder, a
// session CA for their hosts (certificate and key, PEM) and the bundle
// the sandbox trusts.
type Given struct {
	Credentials   []egress.Credential
	CACert, CAKey []byte
	Bundle        []byte
}

// DrawGiven reads each grant's value (ReadCredentials) and draws the
// placeholders and the session CA.
func DrawGiven(server string, grants []credential.Grant, environ []string) (Given, error) {
	creds, err := ReadCredentials(server, grants, environ)
	if err != nil {
		return Given{}, err
	}
	g := Given{Credentials: creds}
	if g.CACert, g.CAKey, err = egress.GenerateCA(egress.CredentialHosts(creds)); err != nil {
		return Given{}, fmt.Errorf("server %q: the session CA: %v", server, err)
	}
	g.Bundle = TrustBundle(g.CACert)
	return g, nil
}

// TrustBundle is the sandbox's CABundle: ca, then the first of the
// host's CA bundles found (hostRoots), so the other hosts' TLS is
// verified as before.
func TrustBundle(ca []byte) []byte {
	bundle := append([]byte{}, ca...)
	for _, f := range hostRoots {
		if roots, err := readBounded(f, 8<<20); err == nil {
			return append(append(bundle, '\n'), roots...)
		}
	}
	return bundle
}

// readBounded reads at most limit bytes of a regular file.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", path, limit)
	}
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}
