package toolpolicy

import (
	"path"
	"unicode/utf8"
)

// globMatch matches name against a pattern in path.Match's syntax (*, ?,
// [...], \ escapes) where * and ? also match "/": a tool name is not a
// path, and "delete_*" must deny "delete_/x" too. A malformed pattern
// (the compiler refuses them) matches every name when it denies and none
// when it allows: either way the surface only shrinks.
func globMatch(pattern, name string, deny bool) bool {
	if _, err := path.Match(pattern, ""); err != nil {
		return deny
	}
	return match(pattern, name)
}

// match walks p and s with one back-track point, the last star: every
// other element matches exactly one character, so going back to the last
// star is enough, and the walk is O(len(p)*len(s)) at worst, whatever the
// name a server chose.
func match(p, s string) bool {
	starP, starS := "", ""
	star := false
	for {
		if p != "" && p[0] == '*' {
			for p != "" && p[0] == '*' {
				p = p[1:]
			}
			starP, starS, star = p, s, true
			continue
		}
		if p == "" && s == "" {
			return true
		}
		if p != "" && s != "" {
			if n, ok := one(p, s); ok {
				p, s = p[n:], s[size(s):]
				continue
			}
		}
		if !star || starS == "" {
			return false
		}
		starS = starS[size(starS):]
		p, s = starP, starS
	}
}

// one matches the first character of s against the first element of p (a
// literal, an escaped literal, ? or a class), returning that element's
// length in p.
func one(p, s string) (int, bool) {
	r, _ := utf8.DecodeRuneInString(s)
	switch p[0] {
	case '?':
		return 1, true
	case '\\':
		if len(p) < 2 {
			return 0, false
		}
		pr, n := utf8.DecodeRuneInString(p[1:])
		return 1 + n, pr == r
	case '[':
		end := classEnd(p)
		// path.Match does not refuse "/" in a class: the class alone
		// against the one character decides it.
		ok, _ := path.Match(p[:end], string(r))
		return end, ok
	default:
		pr, n := utf8.DecodeRuneInString(p)
		return n, pr == r
	}
}

// classEnd is the length of the class at the start of p, "]" included.
func classEnd(p string) int {
	i := 1
	if i < len(p) && p[i] == '^' {
		i++
	}
	for first := true; i < len(p); first = false {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i += 2
		case p[i] == ']' && !first:
			return i + 1
		default:
			i++
		}
	}
	return len(p)
}

func size(s string) int {
	_, n := utf8.DecodeRuneInString(s)
	return n
}

// Matches reports whether an allow pattern admits name, as the relay
// matches it (the compiler checks patterns against a pin with it).
func Matches(pattern, name string) bool { return globMatch(pattern, name, false) }
