package importer

import (
	"path/filepath"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// tooWide says why a path an entry hands its server, as it resolves on
// this machine (symlinks followed), is wider than a policy import writes:
// the root, a home folder or the folder of homes, a credential store or a
// folder holding one; "" when it is none. The entry's words are judged as
// written before (lint's host-grant flags): this catches what only the
// machine shows, ./docs/../.., ${workspaceFolder}/.., a link to ~/.ssh.
func (o Options) tooWide(abs string) string {
	homes := []string{o.Home}
	if r, err := filepath.EvalSymlinks(o.Home); err == nil && o.Home != "" {
		homes = append(homes, r)
	}
	paths := []string{filepath.Clean(abs)}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		paths = append(paths, r)
	}
	for _, p := range paths {
		f := lint.ReadHostPath(p, homes...)
		switch {
		case f.Root:
			return "the filesystem root " + p
		case f.HoldsHomes:
			return "the folder of every home, " + p
		case f.IsHome():
			return "the home folder " + p
		}
		if st := f.Stores(); len(st) > 0 {
			return p + ", which is or holds the credential store " + st[0]
		}
	}
	return ""
}

// wide skips the server when a path it is handed is too wide, saying so;
// it reports whether it did.
func (d *draft) wide(abs, what string) bool {
	why := d.o.tooWide(abs)
	if why == "" {
		return false
	}
	if d.s.Skipped == "" {
		d.s.Skipped = "it is handed a path too wide for a policy import writes: " + what + " is " + why + "; give it the folders it needs instead, then import again"
	}
	return true
}
