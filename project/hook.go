package project

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/hostfile"
)

// hookMarker identifies a pre-commit hook mcpolicy wrote.
const hookMarker = "# mcpolicy pre-commit hook"

// InstallHook writes .git/hooks/pre-commit running vet, build --check,
// lint and diff against HEAD for the project at dir. A hook that is not
// ours is kept: refused without force, moved aside and run first with
// chain.
func InstallHook(dir, mcpolicy string, force, chain bool) (string, error) {
	gitDir, err := git(dir, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return "", fmt.Errorf("%s is not in a git repository: %v", dir, err)
	}
	top, err := git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	hooks := filepath.Join(gitDir, "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		return "", err
	}
	hook := filepath.Join(hooks, "pre-commit")
	local := hook + ".local"
	if old, err := os.ReadFile(hook); err == nil && !strings.Contains(string(old), hookMarker) {
		switch {
		case chain:
			if err := os.Rename(hook, local); err != nil {
				return "", err
			}
		case !force:
			return "", fmt.Errorf("%s exists and is not mcpolicy's: use --chain to run it first, or --force to replace it", hook)
		}
	}
	absDir, _ := filepath.Abs(dir)
	rel, err := filepath.Rel(top, absDir)
	if err != nil {
		return "", err
	}
	script := fmt.Sprintf(`#!/bin/sh
%s: written by mcpolicy hook install; mcpolicy hook install rewrites it.
# Fails the commit when a policy is invalid, .mcpolicy/ is stale, lint finds
# an error, or a grant widens without a waiver. Skip once with --no-verify.
set -e
MCPOLICY=${MCPOLICY:-%s}
if [ -x %s ]; then %s "$@"; fi
cd "$(git rev-parse --show-toplevel)"/%s
"$MCPOLICY" vet .
"$MCPOLICY" build --check .
"$MCPOLICY" lint --discover .
# The first commit has nothing to compare with.
if git rev-parse --verify --quiet HEAD >/dev/null; then "$MCPOLICY" diff --against HEAD -p .; fi
`, hookMarker, shQuote(mcpolicy), shQuote(local), shQuote(local), shQuote(filepath.ToSlash(rel)))
	// .git is protected in every read-write mount of its top: no server
	// writes the way there.
	return hook, hostfile.WriteFile(hook, []byte(script), 0o755, nil)
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
