package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/credential"
)

// LoadCredentials gives the proxy credentials it does not read at spawn
// but finds in dir (the kubernetes backend's egress-proxy Pod: a Secret
// mounted in it alone, written by mcpolicy credentials): each grant's
// value under its name, its placeholder beside it
// (credential.PlaceholderFile), checked as a pair, and the session CA
// the sandbox already trusts (credential.CACertFile and CAKeyFile), which
// the proxy then signs with. Every destination of a grant must be a
// host the proxy's allowlist allows. Call before Serve.
func (p *Proxy) LoadCredentials(dir string, grants []credential.Grant) error {
	if len(grants) == 0 {
		return errors.New("no credential grant")
	}
	var creds []Credential
	seen := map[string]bool{}
	for _, g := range grants {
		if err := g.Check(); err != nil {
			return err
		}
		if seen[g.Name] {
			return fmt.Errorf("credential %s is given twice", g.Name)
		}
		seen[g.Name] = true
		for _, to := range g.To {
			r, err := allowlist.ParseRule(to)
			if err != nil {
				return fmt.Errorf("credential %s: %v", g.Name, err)
			}
			if _, ok := p.Allow.MatchCanonical(r.Host, r.Port); !ok || r.Wildcard {
				return fmt.Errorf("credential %s: %s is not a host the allowlist allows", g.Name, to)
			}
			// The proxy matches a request's destination to the grant's as
			// spelt: another spelling (a trailing dot, port 0443) would
			// never be injected, silently.
			if r.String() != to {
				return fmt.Errorf("credential %s: destination %q: write %q (as the plan spells it)", g.Name, to, r.String())
			}
		}
		value, err := readGiven(dir, g.Name)
		if err != nil {
			return redraw(fmt.Errorf("credential %s: %v", g.Name, err))
		}
		if err := credential.CheckValue(value); err != nil {
			return redraw(fmt.Errorf("credential %s (%s): %v", g.Name, filepath.Join(dir, g.Name), err))
		}
		ph, err := readGiven(dir, credential.PlaceholderFile(g.Name))
		if err != nil {
			return redraw(fmt.Errorf("credential %s: %v", g.Name, err))
		}
		if err := credential.CheckPair(value, ph); err != nil {
			return redraw(fmt.Errorf("credential %s (%s): %v", g.Name, filepath.Join(dir, credential.PlaceholderFile(g.Name)), err))
		}
		creds = append(creds, Credential{Grant: g, Value: value, Placeholder: ph})
	}
	cert, err := readGivenFile(filepath.Join(dir, credential.CACertFile))
	if err != nil {
		return redraw(err)
	}
	key, err := readGivenFile(filepath.Join(dir, credential.CAKeyFile))
	if err != nil {
		return redraw(err)
	}
	p.Credentials = creds
	if err := p.UseCA(cert, key); err != nil {
		return redraw(err)
	}
	return nil
}

// redraw says what to do when the folder's files do not fit the grants:
// they are the objects of another run of mcpolicy credentials (another
// policy's, an expired CA), or none.
func redraw(err error) error {
	return fmt.Errorf("%v: the folder holds what `mcpolicy credentials SERVER` printed, for other credentials or none; print them again from the policy this manifest was built from, apply them, and restart both Pods", err)
}

// readGiven is the file name of dir less one trailing line break (a
// Secret made with kubectl create secret --from-file keeps the file's).
func readGiven(dir, name string) (string, error) {
	b, err := readGivenFile(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return s, nil
}

// readGivenFile reads a regular file (a Secret's keys are symlinks into
// its ..data folder: followed) of a bounded size.
func readGivenFile(path string) ([]byte, error) {
	// Non-blocking: opening a FIFO for reading would wait for a writer
	// before Stat could refuse it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, 64<<10+1)); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	if b.Len() > 64<<10 {
		return nil, fmt.Errorf("%s: more than 64 KiB", path)
	}
	return b.Bytes(), nil
}
