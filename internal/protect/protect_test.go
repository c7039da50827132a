package protect

import "testing"

func TestMatchAndExcept(t *testing.T) {
	for name, want := range map[string]string{
		".git": ".git", ".gitignore": "", ".env": ".env*", ".env.local": ".env*", ".envrc": ".envrc",
		"mcpolicy.cue": "mcpolicy.*", "mcpolicy.d": "mcpolicy.*", "src": "", ".mcp.json": ".mcp.json", ".mcp.json.bak": "",
		// Whose content runs a command on the user's next ordinary one (hg status, mvn -v, a commit).
		".hg": ".hg", ".hgignore": "", ".mvn": ".mvn", "mvnw": "", "gradle.properties": "gradle.properties",
		"lefthook.yml": "lefthook*", "lefthook-local.yml": "lefthook*", ".lefthook": ".lefthook*", ".lefthook-local.json": ".lefthook*",
		".config": ".config", ".configure": "", "mise": "mise", ".mise": ".mise",
		// mise: a config per MISE_ENV, and lockfiles whose URLs mise install downloads.
		"mise.toml": "mise.*", "mise.production.local.toml": "mise.*", "mise.lock": "mise.*", ".mise.dev.toml": ".mise.*", ".miserc.toml": ".miserc.toml", "miserable": "",
		// Code an editor or an ordinary command runs: lint, format, debug, a REPL.
		".lintstagedrc": ".lintstagedrc*", ".lintstagedrc.mjs": ".lintstagedrc*", "lint-staged.config.cts": "lint-staged.config*", "lint-staged": "",
		"eslint.config.ts": "eslint.config*", ".eslintrc.json": ".eslintrc*", ".eslintignore": "", "eslint": "",
		".prettierrc": ".prettierrc*", ".prettierrc.toml": ".prettierrc*", "prettier.config.mjs": "prettier.config*", ".prettierignore": "",
		"pylintrc.toml": "pylintrc.toml", ".pylintrc": ".pylintrc", "pyproject.toml": "",
		".tflint.hcl": ".tflint.hcl", ".tflint.d": ".tflint.d", "main.tf": "",
		".pdbrc": ".pdbrc", ".irbrc": ".irbrc", "irbrc": "irbrc", "$irbrc": "$irbrc", ".irb_history": "", ".pryrc": ".pryrc",
		// Caches and environments the host's interpreter runs from, and build outputs it runs: git-ignored.
		"__pycache__": "__pycache__", ".venv": ".venv", "venv": "venv", ".direnv": ".direnv", ".tox": ".tox", ".nox": ".nox",
		"node_modules": "node_modules", "target": "target", "build": "build", "dist": "dist",
		"env": "", "venvs": "", ".venv2": "", "pycache": "", "build.gradle": "", "build.rs": "", "dist-info": "", "targets": "",
		"gradle": "", "package.json": "", "data": "",
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
