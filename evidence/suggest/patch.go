package suggest

import (
	"fmt"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/schema"
)

// MaxEntries bounds the entries of one patch.
const MaxEntries = 1000

// Patch is the edit of one policy file.
type Patch struct {
	File     string // as given
	Old, New []byte
}

// Diff is the unified diff, its headers naming the file as name.
func (p *Patch) Diff(name string) string { return Unified(name, p.Old, p.New) }

// PatchFile edits file (its content src) to add entries to server's
// network.allow, and checks the result: it must still be a valid policy
// (schema.LoadBytes; root bounds imports as for Load) whose server allows
// every entry.
//
// More than MaxEntries entries are refused: no one reviews such a patch,
// and checking one takes time that grows with the square of its length.
func PatchFile(file string, src []byte, server string, entries []string, root string) (*Patch, error) {
	if len(entries) > MaxEntries {
		return nil, fmt.Errorf("%d destinations were denied: more than one patch can be reviewed for (%d); a server asking for that many may be flooding the proxy: read the log, and allow what the server needs by hand", len(entries), MaxEntries)
	}
	out, err := Edit(file, src, server, entries)
	if err != nil {
		return nil, err
	}
	pol, err := schema.LoadBytes(file, out, root)
	if err != nil {
		return nil, fmt.Errorf("internal error: the edited %s does not load: %v\n%s", file, err, out)
	}
	for _, s := range pol.Servers {
		if s.Name != server {
			continue
		}
		// The exact entries the edited list holds, as a set: a log can
		// ask for many thousands of destinations.
		exact := map[string]bool{}
		for _, e := range s.Network.Allow {
			r, err := allowlist.ParseRule(e.Dest)
			if err != nil {
				return nil, fmt.Errorf("internal error: the edited %s: %v", file, err)
			}
			if !r.Wildcard {
				exact[r.String()] = true
			}
		}
		for _, e := range entries {
			r, err := allowlist.ParseRule(e)
			if err != nil {
				return nil, err
			}
			if r.Wildcard || !exact[r.String()] {
				return nil, fmt.Errorf("internal error: the edited %s does not list %s for %s:\n%s", file, e, server, out)
			}
		}
		return &Patch{File: file, Old: src, New: out}, nil
	}
	return nil, fmt.Errorf("internal error: the edited %s has no server %q (servers: %s)", file, server, names(pol.Servers))
}

func names(ss []schema.Server) string {
	n := make([]string, len(ss))
	for i, s := range ss {
		n[i] = s.Name
	}
	return strings.Join(n, ", ")
}
