package compiler

import (
	"regexp"
	"strings"
	"testing"
)

// TestValidServerName: the loop accepts what the pattern it replaces does.
func TestValidServerName(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	names := []string{"", "a", "0", "-a", ".a", "_a", "a-b.c_d", "A", "a b", "a\n", "é", "a/b", "a:b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "code-index", "x" + strings.Repeat("-", 62), "x" + strings.Repeat("-", 63)}
	for c := range 256 {
		names = append(names, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := validServerName(n), re.MatchString(n); got != want {
			t.Errorf("validServerName(%q) = %v, want %v", n, got, want)
		}
	}
}
