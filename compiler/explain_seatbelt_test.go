package compiler

import (
	"strings"
	"testing"
)

// TestSeatbeltRunsAsInvoker: sandbox-exec cannot switch ids, so a server
// on seatbelt runs as whoever starts it: counted once as a grant whatever
// user says, and explain says so rather than "user: 1000:1000"; nor does
// it claim a no-new-privileges flag macOS does not have.
func TestSeatbeltRunsAsInvoker(t *testing.T) {
	for _, c := range []struct {
		backends, user string
		grant          string   // the invoking-user grant, "" for none
		say, never     []string // explain lines
	}{
		{`["seatbelt"]`, "", "on seatbelt runs as the invoking user, not 1000:1000",
			[]string{"user: never root (the wrapper refuses); the invoking user's own ids, not 1000:1000", "privileges: macOS has no no-new-privileges flag, but seatbelt refuses to run a setuid", "capabilities: macOS has none to drop"},
			[]string{"user: 1000:1000", "setuid binaries cannot raise them", "capabilities: all dropped"}},
		{`["bwrap", "seatbelt"]`, `user: "2000:2000"`, "on seatbelt runs as the invoking user, not 2000:2000",
			[]string{"user: 2000:2000 (not root); on seatbelt the invoking user's own ids", "setuid binaries cannot raise them); seatbelt has no such flag, but refuses"}, nil},
		{`["seatbelt"]`, `user: "invoker"`, "runs as the invoking user (writes rw mounts with their uid)",
			[]string{"user: the invoking user's own ids (never root"}, []string{"not invoker"}},
		{`["bwrap"]`, "", "", []string{"user: 1000:1000 (not root)", "no new privileges (setuid binaries cannot raise them)"}, []string{"seatbelt"}},
	} {
		plans, _, err := compileSrc(t, `version: "v1"
servers: s: {command: ["/bin/true"], backends: `+c.backends+`, `+c.user+`}
`)
		if err != nil {
			t.Fatalf("%s: %v", c.backends, err)
		}
		var invoker []string
		for _, g := range plans[0].Grants() {
			if g.Kind == GrantInvoker {
				invoker = append(invoker, g.Summary)
			}
		}
		if c.grant == "" && len(invoker) > 0 || c.grant != "" && (len(invoker) != 1 || !strings.HasPrefix(invoker[0], c.grant)) {
			t.Errorf("%s %s: invoking-user grants %q, want one starting %q", c.backends, c.user, invoker, c.grant)
		}
		text := Explain(plans[0])
		for _, s := range c.say {
			if !strings.Contains(text, s) {
				t.Errorf("%s %s: explain lacks %q:\n%s", c.backends, c.user, s, text)
			}
		}
		for _, s := range c.never {
			if strings.Contains(text, s) {
				t.Errorf("%s %s: explain says %q:\n%s", c.backends, c.user, s, text)
			}
		}
	}
}
