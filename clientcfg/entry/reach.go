package entry

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/internal/protect"
)

// CheckOutsideGrants refuses to write an entry whose own files — the
// client config holding it, the launcher it runs — the server could
// rewrite: then nothing would stop it from deciding how it starts next.
// A path is writable when it lies in a read-write mount and not in a
// protected entry of it.
func CheckOutsideGrants(p *compiler.Plan, m compiler.Machine, files map[string]string) error {
	for what, f := range files {
		if f == "" {
			continue
		}
		if mount, ok := writable(p, m, f); ok {
			return fmt.Errorf("server %q can write %s (%s), inside its read-write mount %s: it could rewrite how it is started. Keep the %s outside the server's grants (or mount a narrower folder)", p.Server, f, what, mount, what)
		}
	}
	return nil
}

// writable checks f where it is named (its folder resolved: a link there
// is itself a file the server could swap) and where it leads (the file a
// link there names).
func writable(p *compiler.Plan, m compiler.Machine, f string) (string, bool) {
	f = filepath.Clean(f)
	if mount, ok := writableAt(p, m, filepath.Join(resolvedPath(filepath.Dir(f)), filepath.Base(f))); ok {
		return mount, ok
	}
	return writableAt(p, m, resolvedPath(f))
}

func writableAt(p *compiler.Plan, m compiler.Machine, f string) (string, bool) {
	protected := map[string]bool{}
	for _, pr := range p.Protected {
		protected[resolvedPath(m.Resolve(pr.Source))] = true
	}
	for _, mt := range p.Mounts {
		if mt.Mode != compiler.ReadWrite {
			continue
		}
		dir := resolvedPath(m.Resolve(mt.Source))
		rel, err := filepath.Rel(dir, f)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		top := strings.Split(filepath.ToSlash(rel), "/")[0]
		if protected[filepath.Join(dir, top)] || mt.FixedTop() && protect.Except(top, p.UnprotectedNames()) != "" {
			continue
		}
		return mt.Target, true
	}
	return "", false
}

// resolvedPath resolves symlinks as far as the path exists.
func resolvedPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	if d := filepath.Dir(p); d != p {
		return filepath.Join(resolvedPath(d), filepath.Base(p))
	}
	return p
}
