package exposure

import (
	"path"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/credstore"
	"github.com/mcpolicy/mcpolicy/internal/allowlist"
)

// Mount classes: which host folder a mount shows, read from its HostPath
// alone (never from the disk: a score is the same on every machine).
const (
	classRoot        = "root"
	classHomes       = "homes"
	classHome        = "home"
	classCredentials = "credentials"
	classSecretFile  = "secret file"
	classInHome      = "in home"
	classElsewhere   = "elsewhere"
	classProject     = "project"
	classInProject   = "in project"
)

// Env and egress refinements.
const (
	envSecret      = "secret"
	envPlain       = "plain"
	egressHost     = "host"
	egressAddress  = "address"
	egressPrivate  = "private address"
	egressWildcard = "wildcard"
)

// homeRoots are the folders whose entries are home folders, and the
// folders that are a home on their own (root's), as absolute paths.
var (
	homeRoots = []string{"/home", "/Users"}
	homeDirs  = []string{"/root", "/var/root"}
)

// MountClass says which class of host folder src is, and, for the class
// "credentials", which stores (relative to the home) it is, lies in or
// holds (a home holds every one: its class says so).
func (t *Table) MountClass(src compiler.HostPath) (class string, stores []string) {
	rel := path.Clean(src.Rel)
	switch src.Base {
	case compiler.Home:
		return t.belowHome(rel)
	case compiler.ProjectRoot:
		switch {
		case rel == ".":
			return classProject, nil
		case t.secretFile(rel):
			return classSecretFile, nil
		}
		return classInProject, nil
	case compiler.Absolute:
		if rel == "/" {
			return classRoot, nil
		}
		for _, h := range append(homeRoots, homeDirs...) {
			if _, ok := below(h, rel); ok && h != rel || contains(homeRoots, rel) {
				return classHomes, nil // /home, /Users, or a folder above a home (/var)
			}
		}
		for _, h := range homeDirs {
			if sub, ok := below(rel, h); ok {
				return t.belowHome(sub)
			}
		}
		for _, h := range homeRoots {
			if sub, ok := below(rel, h); ok && sub != "." {
				// /home/NAME/sub: NAME's home, sub below it.
				_, sub, _ = strings.Cut(sub, "/")
				if sub == "" {
					sub = "."
				}
				return t.belowHome(sub)
			}
		}
	}
	// Absolute elsewhere, or a base the score does not know (mcpolicy's own
	// paths, added at run time, are no policy's grant).
	if t.secretFile(rel) {
		return classSecretFile, nil
	}
	return classElsewhere, nil
}

// belowHome classes sub, a clean path relative to a home folder.
func (t *Table) belowHome(sub string) (string, []string) {
	switch {
	case sub == ".":
		return classHome, nil
	case sub == ".." || strings.HasPrefix(sub, "../.."):
		return classHomes, nil
	case strings.HasPrefix(sub, "../"): // another user's home: ~/../NAME/sub
		_, rest, _ := strings.Cut(strings.TrimPrefix(sub, "../"), "/")
		if rest == "" {
			rest = "."
		}
		return t.belowHome(rest)
	}
	if s := credstore.Touching(sub); len(s) > 0 {
		return classCredentials, s
	}
	if t.secretFile(sub) {
		return classSecretFile, nil
	}
	return classInHome, nil
}

// below returns p relative to dir when p is dir or below it.
func below(p, dir string) (string, bool) {
	if p == dir {
		return ".", true
	}
	rest, ok := strings.CutPrefix(p, dir+"/")
	return rest, ok
}

// secretFile reports whether the last name of p looks like a secret's.
func (t *Table) secretFile(p string) bool {
	name := path.Base(p)
	return matchAny(t.Match.SecretFiles, name) && !matchAny(t.Match.NotSecretFiles, name)
}

func matchAny(patterns []string, name string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// SecretEnv reports whether an environment variable's name says it holds
// a secret (the rules are the data's match.secretEnv).
func (t *Table) SecretEnv(name string) bool {
	m := t.Match.SecretEnv
	upper := strings.ToUpper(name)
	words := strings.FieldsFunc(upper, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	if len(words) == 0 || contains(m.Attributes, words[len(words)-1]) || contains(m.Counters, words[0]) {
		return false
	}
	for _, c := range m.Contains {
		if strings.Contains(upper, c) {
			return true
		}
	}
	for _, w := range words {
		if contains(m.Words, w) {
			return true
		}
	}
	return false
}

// EgressClass says what an egress rule names.
func EgressClass(r allowlist.Rule) string {
	switch {
	case r.Wildcard:
		return egressWildcard
	case r.Addr.IsValid() && allowlist.Private(r.Addr):
		return egressPrivate
	case r.Addr.IsValid():
		return egressAddress
	}
	return egressHost
}
