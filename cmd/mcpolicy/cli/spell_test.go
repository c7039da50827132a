package cli

import "testing"

// TestSpellText: an error's own line breaks and tabs stay; an escape
// sequence in a name it carries is spelt; spelt text is unchanged.
func TestSpellText(t *testing.T) {
	for in, want := range map[string]string{
		"p.cue:1:2: bad\n\thint: fix it":          "p.cue:1:2: bad\n\thint: fix it",
		"link to /x\x1b]52;c;cHduZWQ=\x07\x1b[2J": `link to /x\x1b]52;c;cHduZWQ=\x07\x1b[2J`,
		"a\r\n\tb\u202e":                          `a\x0d` + "\n\t" + `b\u202e`,
	} {
		if got := spellText(in); got != want {
			t.Errorf("spellText(%q) = %q, want %q", in, got, want)
		}
		if got := spellText(want); got != want {
			t.Errorf("spellText is not idempotent on %q: %q", want, got)
		}
	}
}
