package protect

import "testing"

func TestMatchAndExcept(t *testing.T) {
	for name, want := range map[string]string{
		".git": ".git", ".gitignore": "", ".env": ".env*", ".env.local": ".env*", ".envrc": ".envrc",
		"mcpolicy.cue": "mcpolicy.*", "mcpolicy.d": "mcpolicy.*", "src": "", ".mcp.json": ".mcp.json", ".mcp.json.bak": "",
		// Whose content runs a command on the user's next ordinary one (hg status, mvn -v, a commit).
		".hg": ".hg", ".hgignore": "", ".mvn": ".mvn", "mvnw": "", "gradle": "", "gradle.properties": "gradle.properties",
		"lefthook.yml": "lefthook*", "lefthook-local.yml": "lefthook*", ".lefthook": ".lefthook*", ".lefthook-local.json": ".lefthook*",
		".config": ".config", ".configure": "", "mise.lock": "", "mise": "mise", ".mise": ".mise",
	} {
		if got := Match(name); got != want {
			t.Errorf("Match(%q) = %q, want %q", name, got, want)
		}
	}
	// An entry matching two patterns stays protected until both are unprotected.
	if got := Except("mcpolicy.d", []string{"mcpolicy.*"}); got != "mcpolicy.d" {
		t.Errorf("mcpolicy.d with mcpolicy.* unprotected: %q, want still protected by mcpolicy.d", got)
	}
	if got := Except("mcpolicy.d", []string{"mcpolicy.*", "mcpolicy.d"}); got != "" {
		t.Errorf("mcpolicy.d with both unprotected: %q", got)
	}
	if got := Except(".git", []string{".git"}); got != "" || !Known(".git") || Known(".git/config") {
		t.Errorf("unprotect .git: %q", got)
	}
}
