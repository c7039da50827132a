package artefact

import (
	"strings"
	"testing"
)

// TestExpandFixedTop: the fixed top level and the protected paths are host
// paths the launcher binds, so their placeholders are expanded like the
// grants'; a ruleset without them keeps them out of its JSON.
func TestExpandFixedTop(t *testing.T) {
	rs := &Ruleset{ReadWrite: []string{"${PROJECT_ROOT}", "${HOME}/out"}, FixedTop: "${PROJECT_ROOT}",
		Protected: []string{"${HOME}/out/.git"}, Unprotected: []string{".env*"}, Command: []string{"/bin/true"}}
	if err := rs.Expand("/p", "/h"); err != nil {
		t.Fatal(err)
	}
	if rs.FixedTop != "/p" || strings.Join(rs.Protected, ",") != "/h/out/.git" || strings.Join(rs.Unprotected, ",") != ".env*" {
		t.Errorf("fixedTop %q, protected %q, unprotected %q", rs.FixedTop, rs.Protected, rs.Unprotected)
	}
	plain := string((&Ruleset{Command: []string{"/bin/true"}}).JSON())
	for _, f := range []string{"fixedTop", "protected", "unprotected"} {
		if strings.Contains(plain, `"`+f+`"`) {
			t.Errorf("a ruleset without %s shows it:\n%s", f, plain)
		}
	}
}
