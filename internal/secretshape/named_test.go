package secretshape

import "testing"

// TestNamed: the names that say a value is a secret, and the ones that
// only look like it (a pass-through setting, an attribute of a secret).
func TestNamed(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "DB_PASSWORD": true, "DB_PASS": true, "SMTP_PASS": true, "PASS": true,
		"PGPASS": true, "GPG_PASSPHRASE": true, "API_KEY": true, "REDIS-PASS": true,
		"PASSTHROUGH": false, "BYPASS_CACHE": false, "COMPASS_URL": false, "DB_PASS_FILE": false,
		"TOKEN_URL": false, "MAX_TOKENS": false,
	} {
		if got := Named(name); got != want {
			t.Errorf("Named(%q) = %v, want %v", name, got, want)
		}
	}
}
