package entry

import (
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// TestRewriteOwnJSONEntryInPlace: rewriting mcpolicy's own entry in a
// JSON(C) file replaces the launch values where they stand, adds the ones
// missing after them in the file's layout, drops the ones it no longer
// writes with their comments kept, and keeps every other byte: the
// object's trailing comma or its absence, one-line entries on one line.
func TestRewriteOwnJSONEntryInPlace(t *testing.T) {
	l := managedLaunch("alpha")
	l.Env = map[string]string{"PATH": "/usr/bin"}
	for _, tc := range []struct{ name, client, src, want string }{
		{"launch keys dropped, comments kept", "zed",
			"{\n  \"context_servers\": {\n    \"alpha\": {\n      \"command\": \"/usr/local/bin/mcpolicy-launch\",\n      // the old kind\n      \"type\": \"stdio\", // was needed\n      \"args\": [\"--sha256\", \"old\"],\n      \"enabled\": false,\n      \"env_vars\": [\"A\"] /* gone */,\n    },\n  },\n}\n",
			"{\n  \"context_servers\": {\n    \"alpha\": {\n      \"command\": \"/usr/local/bin/mcpolicy-launch\",\n      // the old kind\n      // was needed\n      \"args\": [\"--sha256\", \"alpha\"],\n      \"env\": {\n        \"PATH\": \"/usr/bin\"\n      },\n      \"enabled\": false,\n      /* gone */\n    },\n  },\n}\n"},
		{"one line, strict", "cursor",
			`{"mcpServers": {"alpha": {"timeout": 1e2, "command": "/usr/local/bin/mcpolicy-launch", "args": [], "type": "stdio", "note": "\u00e9"}}}` + "\n",
			`{"mcpServers": {"alpha": {"timeout": 1e2, "command": "/usr/local/bin/mcpolicy-launch", "args": ["--sha256", "alpha"], "env": {"PATH": "/usr/bin"}, "note": "\u00e9"}}}` + "\n"},
		{"tabs, CRLF, the launch last", "vscode",
			"{\r\n\t\"servers\": {\r\n\t\t\"alpha\": {\r\n\t\t\t\"disabled\": true,\r\n\t\t\t\"command\": \"/usr/local/bin/mcpolicy-launch\"\r\n\t\t}\r\n\t}\r\n}\r\n",
			"{\r\n\t\"servers\": {\r\n\t\t\"alpha\": {\r\n\t\t\t\"disabled\": true,\r\n\t\t\t\"command\": \"/usr/local/bin/mcpolicy-launch\",\r\n\t\t\t\"args\": [\r\n\t\t\t\t\"--sha256\",\r\n\t\t\t\t\"alpha\"\r\n\t\t\t],\r\n\t\t\t\"env\": {\r\n\t\t\t\t\"PATH\": \"/usr/bin\"\r\n\t\t\t},\r\n\t\t\t\"type\": \"stdio\"\r\n\t\t}\r\n\t}\r\n}\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := clientcfg.LookupClient(tc.client)
			out, err := Merge("config", []byte(tc.src), c, "alpha", l, false)
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", out, tc.want)
			}
			if again, err := Merge("config", out, c, "alpha", l, false); err != nil || string(again) != string(out) {
				t.Errorf("writing the entry again changed the file (%v):\n%s", err, again)
			}
		})
	}
}

// TestCommentOnlyObjectsKeepTheirComments: the first member added to an
// object holding only comments (the top level, or the servers) goes after
// them, each comment byte kept, in the file's newline.
func TestCommentOnlyObjectsKeepTheirComments(t *testing.T) {
	c, _ := clientcfg.LookupClient("vscode")
	for _, tc := range []struct{ src, want string }{
		{"{\n  // nothing yet\n}\n", "{\n  // nothing yet\n  \"servers\": {\n    \"alpha\": {"},
		{"{ /* none */ }", "{ /* none */\n  \"servers\": {\n"},
		{"{\r\n  \"servers\": {\r\n    // \"x\": {}\r\n  }\r\n}\r\n", "{\r\n  \"servers\": {\r\n    // \"x\": {}\r\n    \"alpha\": {\r\n"},
	} {
		out, err := Merge("config", []byte(tc.src), c, "alpha", managedLaunch("alpha"), false)
		if err != nil || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("%q: (%v)\n%q\nwant it to start\n%q", tc.src, err, out, tc.want)
		}
	}
}

// TestOldMacNewlines: a JSON file whose lines end in a lone CR (which
// JSON readers take as whitespace) gets CR lines.
func TestOldMacNewlines(t *testing.T) {
	c, _ := clientcfg.LookupClient("claude-code")
	src := "{\r  \"theme\": \"dark\",\r  \"mcpServers\": {}\r}\r"
	out, err := Merge("config", []byte(src), c, "alpha", managedLaunch("alpha"), false)
	if err != nil || strings.Contains(string(out), "\n") || !strings.HasSuffix(string(out), "}\r") || strings.HasSuffix(string(out), "\r\r") {
		t.Errorf("(%v)\n%q", err, out)
	}
}
