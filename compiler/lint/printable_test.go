package lint_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
)

// TestMessagesSpelt is the red team's case: names a server chose in its
// read-write grant — a folder holding ESC over a nested .git, a secret
// file named with an SGR sequence, a symlink whose target holds OSC 52
// (a clipboard write) and BEL — reach no message as they are: every
// finding is spelt where it is made (Run's report function), whichever
// rule put the name in, and so is every format the printer writes.
func TestMessagesSpelt(t *testing.T) {
	const osc = "d\x1b]52;c;cHduZWQ=\x07"
	for _, c := range []struct {
		name, rule, servers string
		files               []string
		want                string // the spelt name, in the message
	}{
		{"nested .git below ESC", "RW_NESTED_PROTECTED", `mounts: [{source: ".", target: "/w", mode: "rw"}]`,
			[]string{"sub\x1b[2Jx/.git/config", "[core]"}, `sub\x1b[2Jx/.git`},
		{"secret named with ESC", "SECRETS_WITH_EGRESS", `mounts: [{source: "work", target: "/w", mode: "rw"}]
	network: allow: ["api.example.com:443"]`,
			[]string{"work/.env\x1b[32mG", "x"}, `.env\x1b[32mG`},
		{"symlink target with OSC 52", "SYMLINK_ESCAPE", `mounts: [{source: "work", target: "/w", mode: "rw"}]`,
			[]string{"work/ln", "-> ../../home/" + osc, "~/" + osc + "/f", "x"}, `d\x1b]52;c;cHduZWQ=\x07`},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := withProjectFiles(lint.Example{Kind: "policy", Text: "version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\t" + c.servers + "\n}\n"}, c.files...)
			rep := lint.Run(targets(t, e), lint.Options{})
			found := false
			for _, f := range rep.Findings {
				if strings.ContainsAny(f.Message, "\x1b\x07") {
					t.Errorf("%s: message holds ESC or BEL: %q", f.Rule, f.Message)
				}
				if f.Rule == c.rule && strings.Contains(f.Message, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no %s finding naming %s; findings: %+v", c.rule, c.want, rep.Findings)
			}
			for _, format := range lint.Formats {
				var b bytes.Buffer
				if err := lint.Write(&b, rep, format, "test"); err != nil {
					t.Fatal(err)
				}
				if bytes.ContainsAny(b.Bytes(), "\x1b\x07") {
					t.Errorf("--format %s writes ESC or BEL:\n%q", format, b.String())
				}
			}
		})
	}
}
