package secretshape

import (
	"fmt"
	"testing"
)

// TestNamed: the names that say a value is a secret, and the ones that
// only look like it (a pass-through setting, an attribute of a secret).
func TestNamed(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "DB_PASSWORD": true, "DB_PASS": true, "SMTP_PASS": true, "PASS": true,
		"PGPASS": true, "GPG_PASSPHRASE": true, "API_KEY": true, "REDIS-PASS": true,
		"PASSTHROUGH": false, "BYPASS_CACHE": false, "COMPASS_URL": false, "DB_PASS_FILE": false,
		"TOKEN_URL": false, "MAX_TOKENS": false,
		"GITHUB_PAT": true, "SENTRY_DSN": true, "DATABASE_URL": true, "MSSQL_CONNECTION_STRING": true,
		"PUBLIC_KEY": false, "STRIPE_PUBLISHABLE_KEY": false, "SECRET_SCANNING": false, "API_KEY_ENV": false,
		"PATH": false, "PATTERN": false, "DSN_FILE": false, "API_URL": false, "PATCH_MODE": false,
	} {
		if got := Named(name); got != want {
			t.Errorf("Named(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestIdentifiers: a name that says its value identifies something is no
// secret whatever the value's shape, unless a token format is in it.
func TestIdentifiers(t *testing.T) {
	for _, c := range []struct {
		name, value string
		secret      bool
	}{
		{"CLOUDFLARE_ACCOUNT_ID", "0123456789abcdef0123456789abcdef", false},
		{"GCP_PROJECT_ID", "my-project-4b7f2c", false},
		{"AZURE_TENANT_ID", "6f1c2a9e-3b4d-4e8f-9a1b-2c3d4e5f6a7b", false},
		{"AZURE_CLIENT_ID", "6f1c2a9e-3b4d-4e8f-9a1b-2c3d4e5f6a7b", false},
		{"OPENAI_ORG_ID", "org-Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1", false},
		{"SLACK_TEAM_ID", "T0123ABCD9Zq8Xk3Lm7Vp2Rt9Wb4Nc", false},
		{"NOTION_WORKSPACE_ID", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", false},
		{"AWS_REGION", "us-east-1", false},
		{"GCP_ZONE", "europe-west1-b", false},
		{"JIRA_USERNAME", "Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1Jd5Fg0", false},
		{"SMTP_USER", "Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1Jd5Fg0", false},
		{"--account-id", "0123456789abcdef0123456789abcdef", false},
		{"accountId", "0123456789abcdef0123456789abcdef", false},
		// A token format is a secret under any name.
		{"CLOUDFLARE_ACCOUNT_ID", "ghp_" + "Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1Jd5Fg0aSe2Ui", true},
		{"DATABASE_URL", "postgres://app:Tr0ub4dor3x@db:5432/app", true},
		// A value that says no secret is needed.
		{"OPENAI_API_KEY", "not-needed", false},
		{"OPENAI_API_KEY", "sk-no-key-required", false},
		{"OPENAI_API_KEY", "ollama", false},
		// Not identifiers: the shape still decides.
		{"SESSION_ID", "Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1Jd5Fg0aSe2Ui", true},
		{"CLOUDFLARE_API_TOKEN", "0123456789abcdef0123456789abcdef", true},
	} {
		if got := Looks(c.name, c.value); got != c.secret {
			t.Errorf("Looks(%q, %q) = %v, want %v (%s)", c.name, c.value, got, c.secret, Kind(c.name, c.value))
		}
	}
}

// TestPlaceholder: a placeholder where a secret goes, and what is none.
func TestPlaceholder(t *testing.T) {
	for _, c := range []struct {
		name, value string
		literal     bool
		want        bool
	}{
		{"GITHUB_TOKEN", "YOUR_TOKEN_HERE", false, true},
		{"GITHUB_TOKEN", "<token>", false, true},
		{"BRAVE_API_KEY", "<YOUR_API_KEY>", false, true},
		{"NOTION_TOKEN", "your-api-key", false, true},
		{"API_KEY", "xxxxxxxxxxxxxxxx", false, true},
		{"OPENAI_API_KEY", "sk-...", false, true},
		{"OPENAI_API_KEY", "sk-xxxxxxxxxxxxxxxxxxxx", false, true},
		{"Authorization", "Bearer YOUR_PAT", false, true},
		{"DB_PASSWORD", "changeme", false, true},
		{"GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_your_token_here", false, true},
		{"API_KEY", "{{API_KEY}}", false, true},
		{"GITHUB_TOKEN", "${GITHUB_TOKEN}", true, true},
		{"GITHUB_TOKEN", "${env:GITHUB_TOKEN}", true, true},
		{"DATABASE_URL", "postgres://app:<password>@db:5432/app", false, true},
		// A reference the client expands, a real secret, no-secret words.
		{"GITHUB_TOKEN", "${GITHUB_TOKEN}", false, false},
		{"GITHUB_TOKEN", "${input:github_token}", false, false},
		{"GITHUB_TOKEN", "ghp_" + "Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1Jd5Fg0aSe2Ui", false, false},
		{"DB_PASSWORD", "hunter2", false, false},
		{"OPENAI_API_KEY", "none", false, false},
		{"OPENAI_API_KEY", "dummy", false, false},
		{"OPENAI_API_KEY", "not-needed", false, false},
		{"OPENAI_API_KEY", "sk-no-key-required", false, false},
		{"OPENAI_API_KEY", "", false, false},
		// Not where a secret goes.
		{"JIRA_URL", "https://your-domain.atlassian.net", false, false},
		{"WORKSPACE", "<your workspace>", false, false},
		{"HOME_DIR", "${HOME}", true, false},
	} {
		if got := Placeholder(c.name, c.value, c.literal); got != c.want {
			t.Errorf("Placeholder(%q, %q, %v) = %v, want %v", c.name, c.value, c.literal, got, c.want)
		}
	}
	for s, want := range map[string]bool{
		"<YOUR_API_KEY>": true, "YOUR_GITHUB_TOKEN": true, "ghp_your_token_here": true, "your-api-key-here": true,
		"mysql://root:YOUR_PASSWORD@localhost/db": true,
		"<path>": false, "your-project": false, "-y": false, "@modelcontextprotocol/server-github": false,
		"ghp_" + "Qz7Xm2Lk9Vb4Rt8Wp3Nc6Yh1Jd5Fg0aSe2Ui": false, "postgres://user@host/db": false,
	} {
		if got := ArgPlaceholder(s); got != want {
			t.Errorf("ArgPlaceholder(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestSecretRefs: the secret-named variables and the inputs a value names.
func TestSecretRefs(t *testing.T) {
	refs := SecretRefs("--token=${env:GITHUB_TOKEN} ${HOME}/x $DB_PASSWORD ${input:pat} %API_KEY% ${input:pat} ${AUTH_TOKEN:-x}")
	if got := fmt.Sprint(refs); got != "[{${env:} GITHUB_TOKEN} {$ DB_PASSWORD} {${input:} pat} {% API_KEY} {${} AUTH_TOKEN}]" {
		t.Errorf("SecretRefs = %s", got)
	}
}
