package clientcfg

import (
	"math"
	"regexp"
	"strings"
)

// The inline-secret heuristic, kept small on purpose. A value looks like a
// token when
//   - it starts with a known token prefix: GitHub ghp_ gho_ ghu_ ghs_ ghr_
//     github_pat_, GitLab glpat-, OpenAI/Anthropic sk-, Slack xoxb- xoxp-
//     xoxa- xoxr- xoxs-, npm npm_, Hugging Face hf_, Stripe sk_live_ rk_live_,
//     Google AIza; or is an AWS access key id (AKIA/ASIA + 16 capitals or
//     digits) or a JWT (eyJ...eyJ...);
//   - or it is long and random: 24 characters or more from [A-Za-z0-9_+/=.-]
//     with upper and lower case letters and digits and a Shannon entropy of
//     3.5 bits a character or more, or 32 hex digits or more (a model name
//     like claude-sonnet-4-20250514, all lower case, is not);
//   - or its name says it is a secret (TOKEN, SECRET, PASSWORD, PASSWD,
//     API_KEY, APIKEY, X-API-Key, PRIVATE_KEY, CREDENTIAL, Authorization;
//     AUTH or KEY as a word) and it holds a value.
//
// A value that is only a variable reference (${VAR}, ${env:VAR}, $VAR,
// ${input:id}, %VAR%, also after "Bearer ") is not inline, nor is an obvious placeholder
// (<...>, your-..., xxx, ***, changeme).
var (
	tokenPrefix = regexp.MustCompile(`^(ghp_|gho_|ghu_|ghs_|ghr_|github_pat_|glpat-|sk-|xox[bpars]-|npm_|hf_|sk_live_|rk_live_|AIza)[A-Za-z0-9_\-]{6,}`)
	awsKey      = regexp.MustCompile(`^(AKIA|ASIA)[A-Z0-9]{16}$`)
	jwt         = regexp.MustCompile(`^eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.`)
	tokenChars  = regexp.MustCompile(`^[A-Za-z0-9_+/=.\-]{24,}$`)
	hex         = regexp.MustCompile(`^[0-9a-fA-F]+$`)
	absPath     = regexp.MustCompile(`^(/[A-Za-z0-9_.\-]+){2,}/?$`) // /home/dev/work/shop: a folder, not a token
	secretName  = regexp.MustCompile(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|API[_-]?KEY|PRIVATE[_-]?KEY|CREDENTIAL|AUTHORIZATION|(^|[_-])AUTH([_-]|$)|(^|[_-])KEY$)`)
	reference   = regexp.MustCompile(`^(\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%)$`)
	authScheme  = regexp.MustCompile(`^\s*(?i:bearer|basic|token)\s+`)
	placeholder = regexp.MustCompile(`(?i)^(<.*>|\[.*\]|your[_\- ].*|.*_here|x{3,}|\*{3,}|changeme|todo|none|null|false|true)$`)
)

// isReference reports whether v only names a variable the client or the
// engine fills in, or is empty.
func isReference(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || reference.MatchString(v)
}

// looksLikeToken reports whether v looks like a credential by its form.
func looksLikeToken(v string) bool {
	v = authScheme.ReplaceAllString(v, "")
	if tokenPrefix.MatchString(v) || awsKey.MatchString(v) || jwt.MatchString(v) {
		return true
	}
	if !tokenChars.MatchString(v) || absPath.MatchString(v) {
		return false
	}
	if hex.MatchString(v) {
		return len(v) >= 32
	}
	mixed := strings.ContainsAny(v, "0123456789") && strings.ContainsAny(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz")
	return mixed && entropy(v) >= 3.5
}

// looksLikeSecret reports whether name=value holds a secret inline.
func looksLikeSecret(name, value string) bool {
	if isReference(authScheme.ReplaceAllString(value, "")) || placeholder.MatchString(strings.TrimSpace(value)) {
		return false
	}
	return looksLikeToken(value) || secretName.MatchString(name)
}

func entropy(s string) float64 {
	counts := map[rune]int{}
	for _, r := range s {
		counts[r]++
	}
	var h float64
	n := float64(len(s))
	for _, c := range counts {
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return h
}
