package credstore

import (
	"slices"
	"testing"
)

// TestEnvFileFolder: the folder of the launcher's default env file
// (~/.config/mcpolicy/env, every server's env grant values) is a store: a
// grant that is, lies in or holds it is touching it, read-only or not.
func TestEnvFileFolder(t *testing.T) {
	for _, sub := range []string{".", ".config", ".config/mcpolicy", ".config/mcpolicy/env"} {
		if !slices.Contains(Touching(sub), ".config/mcpolicy") {
			t.Errorf("Touching(%q) = %q: no .config/mcpolicy", sub, Touching(sub))
		}
	}
	if got := Touching(".config/mcpolicyx"); slices.Contains(got, ".config/mcpolicy") {
		t.Errorf("Touching(.config/mcpolicyx) = %q", got)
	}
}

// TestIssue35Stores: browser profiles, password stores, cloud CLIs, pgpass,
// shell histories and Windows' gcloud are stores, as is a path below one;
// a sibling with the same prefix is not.
func TestIssue35Stores(t *testing.T) {
	for sub, want := range map[string]string{
		".config/google-chrome/Default/Cookies":        ".config/google-chrome",
		".config/chromium":                             ".config/chromium",
		".mozilla/firefox":                             ".mozilla",
		"Library/Application Support/Google/Chrome":    "Library/Application Support/Google/Chrome",
		"Library/Application Support/Firefox/Profiles": "Library/Application Support/Firefox",
		"AppData/Local/Google/Chrome/User Data":        "AppData/Local/Google/Chrome/User Data",
		".local/share/keyrings":                        ".local/share/keyrings",
		".password-store":                              ".password-store",
		".config/op":                                   ".config/op",
		".azure":                                       ".azure",
		".oci/config":                                  ".oci",
		".terraform.d/credentials.tfrc.json":           ".terraform.d",
		".pgpass":                                      ".pgpass",
		".bash_history":                                ".bash_history",
		".zsh_history":                                 ".zsh_history",
		"AppData/Roaming/gcloud":                       "AppData/Roaming/gcloud",
		"AppData/Roaming":                              "AppData/Roaming/gcloud",
	} {
		if !slices.Contains(Touching(sub), want) {
			t.Errorf("Touching(%q) = %q: no %s", sub, Touching(sub), want)
		}
	}
	for _, sub := range []string{".config/operator", ".azure-cli-extensions", ".mozillax", "AppData/LocalLow"} {
		if got := Touching(sub); len(got) > 0 {
			t.Errorf("Touching(%q) = %q, want none", sub, got)
		}
	}
}
