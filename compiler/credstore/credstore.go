// Package credstore is the list of credential stores a home folder holds:
// one list for every pass that judges a host path (lint's MOUNT_CREDENTIALS,
// the exposure score). It is a leaf, so each of those may import it without
// importing the other.
package credstore

import "strings"

// Stores are where a home folder keeps keys and tokens, relative to it.
// .claude holds Claude Code's credentials and its settings, hooks and MCP
// servers: whoever writes it decides what runs next. .local/state/mcpolicy
// holds the egress proxy's decision logs (mcpolicy run's default): whoever
// writes one decides what mcpolicy suggest proposes to allow, and every
// server's destinations are there to read. .config/mcpolicy holds the env
// file (launch.EnvFileDefault) the launcher takes every server's env grant
// values from for clients that pass none: whoever reads it has every
// server's secrets, whoever writes it chooses what the next launch gets.
// Browser profiles hold the session cookies and saved passwords of every
// site the user is signed in to; keyrings, pass and 1Password's CLI hold
// the user's passwords; Azure, OCI and Terraform their cloud tokens;
// ~/.pgpass database passwords; shell histories the tokens typed on a
// command line. Windows' gcloud keeps its credentials in AppData/Roaming.
var Stores = []string{".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker/config.json",
	".netrc", ".npmrc", ".pypirc", ".git-credentials", "Library/Keychains", ".config/gh", ".claude", ".local/state/mcpolicy",
	".config/mcpolicy",
	".config/google-chrome", ".config/chromium", ".mozilla", "Library/Application Support/Google/Chrome",
	"Library/Application Support/Firefox", "AppData/Local/Google/Chrome/User Data", "AppData/Roaming/Mozilla/Firefox",
	".local/share/keyrings", ".password-store", ".config/op", ".azure", ".oci", ".terraform.d", ".pgpass",
	".bash_history", ".zsh_history", "AppData/Roaming/gcloud"}

// Touching lists the stores (relative to the home) that sub, a clean
// slash-separated path relative to a home folder, is, lies in, or holds:
// every one for the home itself ("."). Purely lexical.
func Touching(sub string) []string {
	var hit []string
	for _, c := range Stores {
		if within(sub, c) || within(c, sub) {
			hit = append(hit, c)
		}
	}
	return hit
}

// within reports whether the relative path p is dir or below it ("." holds
// every path).
func within(p, dir string) bool {
	return dir == "." || p == dir || strings.HasPrefix(p, dir+"/")
}
