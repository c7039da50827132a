package findings

import (
	"regexp"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/secretshape"
)

// urlInText is a URL in a message: a scheme, "://", and what follows up
// to a space, a quote or a closing bracket.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>()\[\]{}]+`)

// Redact is msg with the secrets of every URL in it hidden: the password
// of its userinfo (user:…@host) and the value of each query parameter
// named like a secret (?api_key=REDACTED). A reference (${VAR}) is kept:
// it names a secret, it is not one. A finding prints into a CI log; a
// rule that quotes a URL (REMOTE_SERVER's "runs on another machine (URL)")
// must not print the key in it.
func Redact(msg string) string {
	if !strings.Contains(msg, "://") {
		return msg
	}
	return urlInText.ReplaceAllStringFunc(msg, redactURL)
}

func redactURL(u string) string {
	i := strings.Index(u, "://") + 3
	rest := u[i:]
	hostEnd := strings.IndexAny(rest, "/?#")
	if hostEnd < 0 {
		hostEnd = len(rest)
	}
	if at := strings.LastIndex(rest[:hostEnd], "@"); at >= 0 {
		if c := strings.Index(rest[:at], ":"); c >= 0 && !secretshape.IsReference(rest[c+1:at]) && rest[c+1:at] != "" {
			rest = rest[:c+1] + "…" + rest[at:]
		}
	}
	q := strings.Index(rest, "?")
	if q < 0 {
		return u[:i] + rest
	}
	query, frag := rest[q+1:], ""
	if h := strings.Index(query, "#"); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	params := strings.Split(query, "&")
	for k, p := range params {
		name, val, ok := strings.Cut(p, "=")
		if ok && val != "" && secretshape.Named(name) && !secretshape.IsReference(val) {
			params[k] = name + "=REDACTED"
		}
	}
	return u[:i] + rest[:q+1] + strings.Join(params, "&") + frag
}
