package docker

import (
	"slices"
	"testing"
)

func TestSplitVolume(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"/a:/b", []string{"/a", "/b"}},
		{"/a:/b:ro,Z", []string{"/a", "/b", "ro,Z"}},
		{`C:\Users\me:/w:ro`, []string{`C:\Users\me`, "/w", "ro"}},
		{"${CLAUDE_PROJECT_DIR:-.}/x:/x", []string{"${CLAUDE_PROJECT_DIR:-.}/x", "/x"}},
		{"/anon", []string{"/anon"}},
	} {
		if got := splitVolume(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitVolume(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
