// Package secretshape tells an inline secret from a setting by its name
// and value: the heuristic lint uses on client entries and the compiler on
// a policy's setenv values.
package secretshape

import (
	"math"
	"strings"
	"sync"

	"github.com/mcpolicy/mcpolicy/internal/lazyre"
)

// The inline-secret heuristic. A value NAME=value (an env or headers
// member, docker -e, bwrap --setenv, an argument) is read in this order,
// the first step that decides wins:
//
//  0. Only a reference (${VAR}, ${env:VAR}, ${input:id}, $VAR, %VAR%, also
//     after "Bearer "), or empty: not inline.
//  1. Token formats, by shape (credential): GitHub ghp_ gho_ ghu_ ghs_ ghr_
//     + 36 or more base62 characters, github_pat_; GitLab glpat-; Slack
//     xoxb- xoxp- xoxa- xoxr- xoxs- xoxo- xapp-; AWS access key ids
//     (AKIA/ASIA + 16) and, under a name saying secret, a 40-character
//     secret access key; OpenAI sk-, sk-proj-, Anthropic sk-ant-api03-;
//     Stripe, npm, Hugging Face, Google (AIza, ya29.), Groq, Perplexity,
//     Tavily, Linear, Notion, Replicate, Supabase, Firecrawl, Figma,
//     DigitalOcean, Shopify, Atlassian; JWTs; a private key block; a
//     password in a URL (postgres://user:pass@host, mongodb+srv://...,
//     redis://:pass@host) or in a key=value connection string
//     (Password=...); a URL query parameter named like a secret (?api_key=,
//     ?token=). A format matches anywhere in the value (a word of it), so
//     "--token=ghp_..." and {"apiKey":"sk-..."} are found. A token shape
//     is a token whatever its letters say: ghp_ + 36 base62 characters is a
//     token even when they spell "your" somewhere. It is a placeholder when
//     its random part has fewer than 8 distinct characters (ghp_xxxx...,
//     AKIAXXXXXXXXXXXXXXXX) or, where the format allows separators, one of
//     its words is a placeholder word (sk-ant-api03-your-key-here...).
//  2. Placeholders: <...>, [...], {{...}}, your..., ..._here, xxx, ***,
//     "...", changeme, replace-me, todo, none, null, example, values that
//     say no secret is needed (not-needed, unused, n/a, sk-no-key-required,
//     ollama, lm-studio: local models' conventions), and a known
//     prefix with the wrong shape after it (ghp_your_token_here,
//     sk-your-key): not inline. Inside a URL any literal password counts,
//     even "pass" or a default like postgres:postgres (it opens the
//     database); only a placeholder or a reference there does not.
//     Identifiers come next: a name that says its value names something rather
//     than opens it (ACCOUNT_ID, PROJECT_ID, ORG_ID, TENANT_ID, CLIENT_ID,
//     APP_ID, USER_ID, TEAM_ID, WORKSPACE_ID..., REGION, ZONE, ENDPOINT,
//     *_URL, *_USER, *_USERNAME, *_EMAIL; see identifierNamed): not a
//     secret whatever its value's shape (32 hex digits, a UUID), once step 1
//     found no credential in it (a ghp_... token in ACCOUNT_ID still is).
//  3. Settings: booleans, numbers (unless the name says password or PIN),
//     durations, URLs without credentials, paths (/x/y, ~/x, ./x, C:\x),
//     e-mail addresses: not secrets.
//  4. Long and random: 24 characters or more from [A-Za-z0-9_+/=.-] with
//     upper and lower case letters and digits and a Shannon entropy of 3.5
//     bits a character or more, or 32 hex digits or more (a model name like
//     claude-sonnet-4-20250514, all lower case, is not): a secret.
//  5. Otherwise it is a secret only when its name says so (TOKEN, SECRET,
//     PASSWORD, PASSWD, API_KEY, APIKEY, X-API-Key, PRIVATE_KEY,
//     CREDENTIAL, Authorization; AUTH or KEY as a word), and the name is
//     not that of an attribute of one (GITHUB_TOKEN_URL, TOKEN_FILE,
//     API_KEY_HEADER, AUTH_TYPE, MAX_TOKENS...), or when an auth scheme
//     prefixes it ("Bearer abc123").
//
// So AWS_REGION=us-east-1, LOG_LEVEL=debug, DEBUG=true, PORT=8080,
// BASE_URL=https://api.example.com and MODEL=gpt-4o are settings, where
// API_KEY=abc and DB_PASSWORD=hunter2 are secrets.
var (
	secretName = lazyre.New(`(?i)(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|(^|[_-])PASS([_-]|$)|^PGPASS$|API[_-]?KEY|PRIVATE[_-]?KEY|CREDENTIAL|AUTHORIZATION|(^|[_-])AUTH([_-]|$)|(^|[_-])KEY$|(^|[_-])PAT$|(^|[_-])DSN$|^DATABASE[_-]URL$|CONNECTION[_-]?STRING$)`)
	reference  = lazyre.New(`^(\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%)$`)
	// mentionsReference: a value built on the client's own variables
	// ("${PATH}:/opt/bin"), which a client that expands them does.
	mentionsReference = lazyre.New(`\$\{[^}]*\}|\$[A-Za-z_]|%[A-Za-z_][A-Za-z0-9_]*%`)
	authScheme        = lazyre.New(`^\s*(?i:bearer|basic|token|bot)\s+`)

	tokenChars = lazyre.New(`^[A-Za-z0-9_+/=.\-]{24,}$`)
	hex        = lazyre.New(`^[0-9a-fA-F]+$`)

	placeholder = lazyre.New(`(?i)^(<.*>|\[.*\]|\{\{.*\}\}|\{[A-Za-z_ ]*\}|\.\.\.|…|x{3,}|\*{3,}|•+|-+|_+|\?+|` +
		`change[_\-]?me|replace[_\-]?me|fill[_\-]?me|todo|tbd|fixme|none|null|nil|undefined|redacted|dummy|fake|sample|example|placeholder|` +
		`not[_\-]?(needed|required|used|set)|unused|empty|n/?a|(sk-)?no[_\-]?key([_\-]required)?|ollama|lm[_\-]?studio|` +
		`secret|token|password|passwd|pass|api[_\-]?key|key|` +
		`your.*|.*[_\- ]your[_\- ].*|.*[_\- ]here|(insert|enter|put|add|paste|replace|set)[_\- ].*|.*(\.\.\.|…)|.*(x{4,}|X{4,}|\*{4,}|0{8,}).*)$`)
	placeholderWord = lazyre.New(`(?i)^(your|here|replace|insert|example|placeholder|token|key|secret|x{3,})$`)

	boolean  = lazyre.New(`(?i)^(true|false|yes|no|on|off|enabled?|disabled?)$`)
	number   = lazyre.New(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?([kKmMgGtT][bB]?|ms|s|m|h|d|%)?$`)
	pathLike = lazyre.New(`^(~|~/.*|\./.*|\.\./.*|[A-Za-z]:[\\/].*|\\\\.*|(/[A-Za-z0-9_.@+\- ]+){2,}/?|/[A-Za-z0-9_.\-]*)$`)
	email    = lazyre.New(`^[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}$`)
	anyURL   = lazyre.New(`^[A-Za-z][A-Za-z0-9+.\-]*://\S*$`)
	pinName  = lazyre.New(`(?i)(PASSWORD|PASSWD|PASSPHRASE|(^|[_-])PIN$)`)

	urlPassword = lazyre.New(`([A-Za-z][A-Za-z0-9+.\-]*)://[^\s:/?#@]*:([^\s@/?#]+)@`)
	dsnPassword = lazyre.New(`(?i)(?:^|;)\s*(?:password|pwd)\s*=\s*([^;]+)`)
	urlQuery    = lazyre.New(`(?i)[?&]((?:api[_\-]?key|apikey|access[_\-]?token|auth[_\-]?token|token|key|secret|client[_\-]?secret|password|sig|signature))=([^&#\s]+)`)
	privateKey  = lazyre.New(`-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----`)
	awsSecret   = lazyre.New(`^[A-Za-z0-9/+]{40}$`)
)

// tokenFormats are the credential formats, each anchored on one word: a
// prefix, then the random part in its exact shape (exact), or in a looser
// one (loose: at least 16 characters of the format's alphabet, for other
// lengths and older versions of the format). Built on first use: most
// commands read no client config.
var tokenFormats = sync.OnceValue(func() []tokenFormat {
	return []tokenFormat{
		tok(`gh[pousr]_`, `[A-Za-z0-9]{36,}`, `[A-Za-z0-9]{16,}`, "a GitHub token"),
		tok(`github_pat_`, `[A-Za-z0-9_]{50,}`, `[A-Za-z0-9_]{16,}`, "a GitHub token"),
		tok(`glpat-`, `[A-Za-z0-9_\-.]{20,}`, `[A-Za-z0-9_\-.]{16,}`, "a GitLab token"),
		tok(`xox[abposr]-`, `[0-9]+-[0-9A-Za-z\-]{10,}`, `[0-9A-Za-z\-]{16,}`, "a Slack token"),
		tok(`xapp-`, `[0-9]-[0-9A-Za-z\-]{10,}`, ``, "a Slack token"),
		tok(`(?:AKIA|ASIA)`, `[A-Z0-9]{16}`, ``, "an AWS access key id"),
		tok(`sk-ant-(?:api|admin|sid|oat)\d\d-`, `[A-Za-z0-9_\-]{32,}`, ``, "an Anthropic API key"),
		tok(`sk-ant-`, ``, `[A-Za-z0-9_\-]{16,}`, "an Anthropic API key"),
		tok(`sk-(?:proj|svcacct|admin|or-v1)-`, `[A-Za-z0-9_\-]{32,}`, ``, "an OpenAI-style API key"),
		tok(`sk-`, `[A-Za-z0-9]{32,}`, `[A-Za-z0-9_\-]{16,}`, "an OpenAI-style API key"),
		tok(`(?:sk|rk)_(?:live|test)_`, `[A-Za-z0-9]{20,}`, `[A-Za-z0-9]{16,}`, "a Stripe key"),
		tok(`npm_`, `[A-Za-z0-9]{36}`, `[A-Za-z0-9]{16,}`, "an npm token"),
		tok(`hf_`, `[A-Za-z0-9]{30,}`, `[A-Za-z0-9]{16,}`, "a Hugging Face token"),
		tok(`AIza`, `[A-Za-z0-9_\-]{35}`, ``, "a Google API key"),
		tok(`ya29\.`, `[A-Za-z0-9_\-.]{20,}`, ``, "a Google OAuth token"),
		tok(`gsk_`, `[A-Za-z0-9]{40,}`, `[A-Za-z0-9]{16,}`, "a Groq API key"),
		tok(`pplx-`, `[A-Za-z0-9]{40,}`, `[A-Za-z0-9]{16,}`, "a Perplexity API key"),
		tok(`tvly-(?:dev-|prod-)?`, `[A-Za-z0-9]{24,}`, `[A-Za-z0-9]{16,}`, "a Tavily API key"),
		tok(`lin_(?:api|oauth)_`, `[A-Za-z0-9]{32,}`, `[A-Za-z0-9]{16,}`, "a Linear API key"),
		tok(`(?:ntn_|secret_)`, `[A-Za-z0-9]{40,}`, ``, "a Notion token"),
		tok(`r8_`, `[A-Za-z0-9]{30,}`, ``, "a Replicate token"),
		tok(`sbp_`, `[a-f0-9]{40}`, ``, "a Supabase token"),
		tok(`fc-`, `[a-f0-9]{32}`, ``, "a Firecrawl API key"),
		tok(`figd_`, `[A-Za-z0-9_\-]{30,}`, ``, "a Figma token"),
		tok(`dop_v1_`, `[a-f0-9]{64}`, ``, "a DigitalOcean token"),
		tok(`shp(?:at|ss|ca|pa)_`, `[a-fA-F0-9]{32}`, ``, "a Shopify token"),
		tok(`ATATT3`, `[A-Za-z0-9_\-=]{50,}`, ``, "an Atlassian API token"),
		tok(`eyJ[A-Za-z0-9_\-]{8,}\.`, `eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`, ``, "a JWT"),
	}
})

// tokenFormat is one credential format.
type tokenFormat struct {
	exact, loose *lazyre.RE
	what         string
}

// tok makes a token format: prefix, then the random part (a group).
func tok(prefix, exact, loose, what string) tokenFormat {
	f := tokenFormat{what: what}
	if exact != "" {
		f.exact = lazyre.New(`^` + prefix + `(` + exact + `)$`)
	}
	if loose != "" {
		f.loose = lazyre.New(`^` + prefix + `(` + loose + `)$`)
	}
	return f
}

// placeholderPart: a word a random part in a loose shape does not hold.
var placeholderPart = lazyre.New(`(?i)(your|here|token|example|replace|placeholder|changeme|insert|dummy|sample|xxxx|\*\*\*)`)

// isReference reports whether v only names a variable the client or the
// engine fills in, or is empty.
func isReference(v string) bool {
	v = strings.TrimSpace(v)
	return v == "" || reference.MatchString(v)
}

// tokenKind says which credential format the word w has, "" for none (or
// a placeholder in that format's shape): its exact shape, whatever its
// letters say, unless its random part has fewer than 8 distinct characters
// or a placeholder word between its separators; or a loose shape without a
// placeholder word anywhere in it.
func tokenKind(w string) string {
	if len(w) < 17 || !hasTokenPrefix(w) { // the shortest format (xapp-) has 17
		return ""
	}
	for _, f := range tokenFormats() {
		if f.exact != nil {
			if m := f.exact.FindStringSubmatch(w); m != nil {
				if distinct(m[1]) < 8 {
					return ""
				}
				for _, part := range strings.FieldsFunc(m[1], func(r rune) bool { return r == '-' || r == '_' }) {
					if placeholderWord.MatchString(part) {
						return ""
					}
				}
				return f.what
			}
		}
		if f.loose != nil {
			if m := f.loose.FindStringSubmatch(w); m != nil {
				if distinct(m[1]) < 8 || placeholderPart.MatchString(m[1]) {
					return ""
				}
				return f.what
			}
		}
	}
	return ""
}

// tokenPrefixes are the literal starts of tokenFormats: a word starting
// with none of them is no token (and costs no regexp).
var tokenPrefixes = []string{"gho_", "ghp_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xox", "xapp-", "AKIA", "ASIA",
	"sk-", "sk_", "rk_", "npm_", "hf_", "AIza", "ya29.", "gsk_", "pplx-", "tvly-", "lin_", "ntn_", "secret_", "r8_",
	"sbp_", "fc-", "figd_", "dop_v1_", "shp", "ATATT3", "eyJ"}

func hasTokenPrefix(w string) bool {
	for _, p := range tokenPrefixes {
		if strings.HasPrefix(w, p) {
			return true
		}
	}
	return false
}

// credential says what credential s holds by its shape alone ("" when
// none): a token format as one of its words, a private key, a literal
// password in a URL or a connection string, a secret URL query parameter.
func credential(s string) string {
	if len(s) < 12 { // no format is shorter
		return ""
	}
	if strings.Contains(s, "PRIVATE KEY-----") && privateKey.MatchString(s) {
		return "a private key"
	}
	if strings.Contains(s, "://") && strings.Contains(s, "@") {
		if m := urlPassword.FindStringSubmatch(s); m != nil && literal(m[2], true) {
			return "a password in a " + strings.ToLower(m[1]) + ":// URL"
		}
	}
	if strings.Contains(s, "=") {
		if m := dsnPassword.FindStringSubmatch(s); m != nil && literal(strings.TrimSpace(m[1]), true) {
			return "a password in a connection string"
		}
		if strings.ContainsAny(s, "?&") {
			if m := urlQuery.FindStringSubmatch(s); m != nil && len(m[2]) >= 8 && literal(m[2], false) {
				return "a secret in a URL's query (" + m[1] + ")"
			}
		}
	}
	for _, w := range strings.FieldsFunc(s, wordSep) {
		if what := tokenKind(w); what != "" {
			return what
		}
	}
	return ""
}

// wordSep separates the words a token format is looked for in.
func wordSep(r rune) bool {
	return strings.ContainsRune(" \t\n\r\"'=:,;&?(){}[]<>|\\", r)
}

// literal reports whether v, found where a credential goes, is one written
// out: not a reference, not a placeholder. inURL: any word counts, even
// "pass" (see the heuristic above).
func literal(v string, inURL bool) bool {
	if v == "" || isReference(v) || strings.Contains(v, "${") || strings.HasPrefix(v, "$") || strings.HasPrefix(v, "%") && strings.HasSuffix(v, "%") {
		return false
	}
	if inURL {
		switch strings.ToLower(v) {
		case "pass", "password", "passwd", "secret":
			return true
		}
	}
	return !placeholder.MatchString(v)
}

// secretNamed reports whether a variable, header or option name says it
// holds a secret (and not an attribute of one: its URL, file, type...).
func secretNamed(name string) bool {
	upper := strings.ToUpper(name)
	if !strings.Contains(upper, "TOKEN") && !strings.Contains(upper, "SECRET") && !strings.Contains(upper, "PASS") &&
		!strings.Contains(upper, "KEY") && !strings.Contains(upper, "CREDENTIAL") && !strings.Contains(upper, "AUTH") &&
		!strings.Contains(upper, "PAT") && !strings.Contains(upper, "DSN") && !strings.Contains(upper, "DATABASE") &&
		!strings.Contains(upper, "CONNECTION") ||
		!secretName.MatchString(name) {
		return false
	}
	// A connection string or DSN holds its password: a secret, though
	// its last word (URL) names an attribute elsewhere.
	if dsnName.MatchString(name) {
		return true
	}
	words := strings.FieldsFunc(upper, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' })
	if len(words) == 0 {
		return false
	}
	// A public or publishable key is made to be shown (PUBLIC_KEY,
	// STRIPE_PUBLISHABLE_KEY); a flag that turns a feature on is no key
	// (SECRET_SCANNING).
	for _, w := range words {
		if w == "PUBLIC" || w == "PUBLISHABLE" || w == "PUB" || w == "SCANNING" {
			return false
		}
	}
	switch words[0] {
	case "MAX", "MIN", "NUM", "USE", "ENABLE", "DISABLE", "REQUIRE":
		return false
	}
	return !secretAttribute[words[len(words)-1]]
}

// dsnName is a variable holding a connection string, password included.
var dsnName = lazyre.New(`(?i)((^|[_-])DSN$|^DATABASE[_-]URL$|CONNECTION[_-]?STRING$)`)

var secretAttribute = map[string]bool{
	"URL": true, "URI": true, "ENDPOINT": true, "HOST": true, "HOSTNAME": true, "PORT": true, "FILE": true,
	"PATH": true, "DIR": true, "DIRECTORY": true, "NAME": true, "TYPE": true, "MODE": true, "HEADER": true,
	"ENABLED": true, "DISABLED": true, "REQUIRED": true, "LIMIT": true, "LIMITS": true, "TTL": true,
	"EXPIRY": true, "EXPIRES": true, "EXPIRATION": true, "LENGTH": true, "SIZE": true, "COUNT": true,
	"PROVIDER": true, "METHOD": true, "SCOPE": true, "SCOPES": true, "REGION": true, "VERSION": true,
	"ID": true, "FORMAT": true, "LOCATION": true, "STORE": true, "HELPER": true, "COMMAND": true, "CMD": true,
	"PREFIX": true, "ISSUER": true, "AUDIENCE": true, "TOKENS": true,
	// The name of the variable that holds it (--api-key-env OPENAI_API_KEY).
	"ENV": true, "VAR": true, "VARIABLE": true,
}

// setting reports whether v is a plain setting, not a secret: a boolean, a
// number (unless name is a password's or a PIN's), a URL without
// credentials, a path, an e-mail address.
func setting(name, v string) bool {
	switch {
	case boolean.MatchString(v), email.MatchString(v), anyURL.MatchString(v), pathLike.MatchString(v):
		return true
	case number.MatchString(v):
		return !pinName.MatchString(name)
	}
	return false
}

// random reports whether v is long and random (see the heuristic above).
func random(v string) bool {
	if !tokenChars.MatchString(v) {
		return false
	}
	if hex.MatchString(v) {
		return len(v) >= 32
	}
	mixed := strings.ContainsAny(v, "0123456789") && strings.ContainsAny(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz")
	return mixed && entropy(v) >= 3.5
}

// secretKind says what secret name=value holds inline, "" when none (see
// the heuristic above).
func secretKind(name, value string) string {
	v := strings.TrimSpace(value)
	bare := strings.TrimSpace(authScheme.ReplaceAllString(v, ""))
	if bare == "" || isReference(bare) || commandSubstitution(bare) {
		return ""
	}
	if what := credential(bare); what != "" {
		return what
	}
	if identifierNamed(name) {
		return ""
	}
	if secretNamed(name) && awsSecret.MatchString(bare) && random(bare) {
		return "an AWS secret access key"
	}
	if placeholder.MatchString(bare) || setting(name, bare) {
		return ""
	}
	if random(bare) {
		return "a random-looking value"
	}
	if secretNamed(name) || bare != v && !strings.ContainsAny(bare, " \t") {
		return "a value its name says is secret"
	}
	return ""
}

// looksLikeSecret reports whether name=value holds a secret inline.
func looksLikeSecret(name, value string) bool { return secretKind(name, value) != "" }

// distinct counts the distinct characters of s.
func distinct(s string) int {
	seen := map[rune]bool{}
	for _, r := range s {
		seen[r] = true
	}
	return len(seen)
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

// Kind says what makes name=value an inline secret ("a GitHub token", "a
// value its name says is secret"...), "" when it is a setting.
func Kind(name, value string) string { return secretKind(name, value) }

// Looks reports whether name=value holds a secret inline.
func Looks(name, value string) bool { return looksLikeSecret(name, value) }

// IsReference reports whether v only names a variable (${VAR}, $VAR, %VAR%).
func IsReference(v string) bool { return isReference(v) }

// Credential names the credential s holds by its shape, "" for none.
func Credential(s string) string { return credential(s) }

// Named reports whether a name says its value is secret (API_KEY, TOKEN).
func Named(name string) bool { return secretNamed(name) }

// Patterns used by readers of client entries beside the heuristic.
var (
	MentionsReference = mentionsReference
	PrivateKey        = privateKey
	SecretName        = secretName
)

// TokenFormats builds the known token formats (a test compiles them).
func TokenFormats() int { return len(tokenFormats()) }

// identifierOwners are the words before a final ID (ACCOUNT_ID, TEAM_ID):
// what an identifier names. An ID of something else (SESSION_ID, which
// some services take as a bearer credential) is left to the value's shape.
var identifierOwners = map[string]bool{
	"ACCOUNT": true, "PROJECT": true, "ORG": true, "ORGANIZATION": true, "ORGANISATION": true, "TENANT": true,
	"CLIENT": true, "APP": true, "APPLICATION": true, "USER": true, "TEAM": true, "WORKSPACE": true,
	"SITE": true, "ZONE": true, "REGION": true, "SPACE": true, "DATABASE": true, "DB": true, "CHANNEL": true,
	"GUILD": true, "BOARD": true, "CUSTOMER": true, "SUBSCRIPTION": true, "RESOURCE": true, "INSTANCE": true,
	"CLUSTER": true, "INDEX": true, "DATASET": true, "CALENDAR": true, "FOLDER": true, "DRIVE": true,
	"SHEET": true, "SPREADSHEET": true, "DOC": true, "DOCUMENT": true, "PAGE": true, "REPO": true,
	"REPOSITORY": true, "SHOP": true, "MODEL": true, "AGENT": true, "ASSISTANT": true, "ENVIRONMENT": true,
	"ENV": true, "SERVICE": true, "NAMESPACE": true, "REALM": true, "DOMAIN": true, "GROUP": true,
	"BOT": true, "KEY": true, "LOCATION": true, "BUCKET": true, "PIPELINE": true, "STACK": true,
}

// identifierLast are the last words of a name whose value names a place or
// a principal, not a key to it.
var identifierLast = map[string]bool{
	"REGION": true, "ZONE": true, "ENDPOINT": true, "URL": true, "URI": true, "HOST": true, "HOSTNAME": true,
	"USER": true, "USERNAME": true, "LOGIN": true, "EMAIL": true,
}

// nameWords splits a variable, header or option name into upper-case
// words: GITHUB_TOKEN, x-api-key, --account-id, accountId.
func nameWords(name string) []string {
	var b strings.Builder
	prevLower := false
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == ' ':
			b.WriteByte(' ')
			prevLower = false
			continue
		case 'A' <= r && r <= 'Z' && prevLower:
			b.WriteByte(' ')
		}
		prevLower = 'a' <= r && r <= 'z' || '0' <= r && r <= '9'
		b.WriteRune(r)
	}
	return strings.Fields(strings.ToUpper(b.String()))
}

// identifierNamed reports whether a name says its value identifies
// something (an account, a project, a region, an endpoint, a user) rather
// than being a credential for it: see step 2b of the heuristic.
func identifierNamed(name string) bool {
	words := nameWords(name)
	n := len(words)
	switch {
	case n == 0:
		return false
	case identifierLast[words[n-1]]:
		return true
	case words[n-1] == "ID" || words[n-1] == "IDS":
		return n >= 2 && identifierOwners[words[n-2]]
	}
	return false
}

// IdentifierNamed reports whether a name says its value is an identifier
// (ACCOUNT_ID, REGION, *_URL, *_EMAIL), never a secret by its shape alone.
func IdentifierNamed(name string) bool { return identifierNamed(name) }

// noSecret is a value that says no secret is needed (a local model's
// key, a dummy): the variable hands the server nothing.
var noSecret = lazyre.New(`(?i)^\s*(not[_\-]?(needed|required|used|set)|unused|n/?a|(sk-)?no[_\-]?key([_\-]required)?|ollama|lm[_\-]?studio|none|null|nil|dummy|fake|empty)\s*$`)

// NoSecret reports whether a value says no secret is needed.
func NoSecret(v string) bool { return noSecret.MatchString(v) }

// DSNNamed reports whether a variable's name says it holds a connection
// string (DATABASE_URL, SENTRY_DSN, *_CONNECTION_STRING).
func DSNNamed(name string) bool { return dsnName.MatchString(name) }

// commandSubstitution is a value the shell computes when the command runs
// ($(cat ~/.token), `pass show x`): read from elsewhere, not inline.
func commandSubstitution(v string) bool {
	v = strings.Trim(v, `"'`)
	return strings.HasPrefix(v, "$(") && strings.HasSuffix(v, ")") || len(v) > 1 && strings.HasPrefix(v, "`") && strings.HasSuffix(v, "`")
}
