package secretshape

import (
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// What a placeholder is (docs/secrets.md). A committed config whose
// secret goes inline asks every user to paste a real one into that file:
// the value is fake today, the file's instruction is the finding. A value
// is such a placeholder where a secret goes (a variable, header or option
// whose name says secret, a value after an auth scheme, the password of a
// URL) when it is none of the credentials of the heuristic (Kind) and
// either
//   - it asks for a value: <...>, [...], {{...}}, {NAME}, YOUR_..., ..._HERE,
//     your-api-key, insert/enter/paste/replace/set ..., changeme,
//     replace-me, todo, tbd, fixme, placeholder, xxx..., ***, "...", or a
//     name word alone (token, secret, password, api_key, key);
//   - or it is a token format's prefix with no token after it
//     (ghp_your_token_here, sk-..., sk-xxxxxxxx);
//   - or, in a client that expands nothing, a reference (${GITHUB_TOKEN},
//     ${env:GITHUB_TOKEN}): the server gets the text itself, so the user
//     must replace it with the secret.
//
// Values that say "no secret needed" are not placeholders: none, null,
// dummy, fake, not-needed, an empty string. Nor is a value anywhere a
// secret does not go (JIRA_URL=https://your-domain.atlassian.net).
var asksFor = lazyre.New(`(?i)^(<.*>|\[.*\]|\{\{.*\}\}|\{[A-Za-z_ ]*\}|\.\.\.|…|x{3,}|\*{3,}|•{3,}|` +
	`change[_\-]?me|replace[_\-]?me|fill[_\-]?me|todo|tbd|fixme|placeholder|` +
	`secret|token|password|passwd|api[_\-]?key|key|pat|` +
	`your.*|.*[_\- ]your[_\- ].*|.*[_\- ]here|(insert|enter|put|add|paste|replace|set)[_\- ].*|.*(\.\.\.|…)|.*(x{4,}|X{4,}|\*{4,}).*)$`)

// asks reports whether v, where a secret goes, asks for one (not a
// reference: see Placeholder).
func asks(v string) bool {
	if asksFor.MatchString(v) {
		return true
	}
	return hasTokenPrefix(v) && (placeholderPart.MatchString(v) || strings.Contains(v, "...") || strings.Contains(v, "…"))
}

// urlAsks reports whether s holds a URL whose password asks for one
// (postgres://user:<password>@host, mysql://root:YOUR_PASSWORD@db).
func urlAsks(s string) bool {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return false
	}
	m := urlPassword.FindStringSubmatch(s)
	return m != nil && !strings.ContainsAny(m[2], "$%") && asks(m[2])
}

// Placeholder reports whether name=value holds a placeholder where a
// secret goes (see above); literal says the client expands no ${VAR}, so
// that a reference reaches the server as written.
func Placeholder(name, value string, literal bool) bool {
	v := strings.TrimSpace(value)
	bare := strings.TrimSpace(authScheme.ReplaceAllString(v, ""))
	if bare == "" || secretKind(name, value) != "" {
		return false
	}
	if urlAsks(bare) {
		return true
	}
	if !secretNamed(name) && bare == v {
		return false
	}
	if isReference(bare) {
		return literal && strings.HasPrefix(bare, "$")
	}
	return asks(bare)
}

// ArgPlaceholder reports whether a bare argument (no option or variable
// name before it) is a placeholder for a secret: one that asks for a
// value and names a secret in doing so (<YOUR_API_KEY>, your-github-token,
// ghp_your_token_here), or a URL whose password asks for one.
func ArgPlaceholder(s string) bool {
	if urlAsks(s) {
		return true
	}
	// Most arguments (packages, paths, options) name no secret: the
	// cheap tests first.
	if !hasTokenPrefix(s) && !namesSecret(strings.Trim(s, "<>[]{} ")) {
		return false
	}
	return asks(s) && credential(s) == ""
}

// namesSecret reports whether a placeholder's text names a secret
// (YOUR_API_KEY, your-github-token).
func namesSecret(s string) bool {
	u := strings.ToUpper(s)
	if !strings.Contains(u, "TOKEN") && !strings.Contains(u, "SECRET") && !strings.Contains(u, "PASS") &&
		!strings.Contains(u, "KEY") && !strings.Contains(u, "CREDENTIAL") && !strings.Contains(u, "AUTH") {
		return false
	}
	return strings.Contains(u, "TOKEN") || secretName.MatchString(s)
}

// refs finds the references in a value.
var refs = lazyre.New(`\$\{(input:|env:)?([A-Za-z_][A-Za-z0-9_.\-]*)(?::-[^}]*)?\}|(\$)([A-Za-z_][A-Za-z0-9_]*)|(%)([A-Za-z_][A-Za-z0-9_]*)%`)

// Ref is a reference in a value: Form is how it is written ("${}",
// "${env:}", "${input:}", "$" or "%"), Name what it names.
type Ref struct{ Form, Name string }

// SecretRefs returns the references of a value that name a secret: a
// variable whose name says secret (${GITHUB_TOKEN}, ${env:API_KEY},
// $DB_PASSWORD, %API_KEY%), and every VS Code input (${input:ID}, which
// the caller looks up); each once, in order.
func SecretRefs(s string) []Ref {
	if !strings.ContainsAny(s, "$%") {
		return nil
	}
	var out []Ref
	for _, m := range refs.FindAllStringSubmatch(s, -1) {
		r := Ref{Form: "${" + m[1] + "}", Name: m[2]}
		switch {
		case m[3] != "":
			r = Ref{Form: "$", Name: m[4]}
		case m[5] != "":
			r = Ref{Form: "%", Name: m[6]}
		}
		if r.Form != "${input:}" && !secretNamed(r.Name) || slices.Contains(out, r) {
			continue
		}
		out = append(out, r)
	}
	return out
}
