package importer

import "github.com/mcpolicy/mcpolicy/internal/lazyre"

// importSecretName and opaqueURL catch what lint's secret reading lets
// pass but import must not copy into a policy (a reviewed, shared,
// committed file): a name that says password, cookie, session, webhook
// or DSN (DB_PASS, SMTP_PWD, SENTRY_DSN), a URL carrying a long opaque
// token in its path (a Slack or Discord webhook). A value caught here
// goes to the env file: wrongly caught, it costs a line there.
var (
	importSecretName = lazyre.New(`(?i)(^|[_.-])(PASS|PWD|PASSPHRASE|PIN|COOKIES?|SESSION|WEBHOOK|HOOK|DSN|SIGNING|SALT|CERT|PRIVATE)([_.-]|$)`)
	opaqueURL        = lazyre.New(`^[a-z][a-z0-9+.-]*://[^/]+/.*[A-Za-z0-9_-]{20,}`)
)

// secretToImport reports whether import keeps a constant out of the
// policy as a secret, beyond what the client reader flagged.
func secretToImport(name, value string) bool {
	return importSecretName.MatchString(name) || opaqueURL.MatchString(value)
}
