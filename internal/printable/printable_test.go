package printable

import "testing"

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"api.test:443":  "api.test:443",
		"bücher.test":   "bücher.test",
		"a\u202eb":      `a\u202eb`,
		"\x1b[2J":       `\x1b[2J`,
		"a\nb\r":        `a\x0ab\x0d`,
		"\xff":          `\xff`,
		"\u009b":        `\u009b`,
		"a\u200bb":      `a\u200bb`,
		"\U000e0041":    `\U000e0041`,
		`host "a" \ ok`: `host "a" \ ok`,
		"\ufffd":        `\ufffd`,
		"\u2066x\u2069": `\u2066x\u2069`,
		"тест\u061c":    `тест\u061c`,
		"\u00a0":        `\u00a0`,
		"tab\there":     `tab\x09here`,
		"\x00nul":       `\x00nul`,
		"fullwidth ａｐｉ": "fullwidth ａｐｉ",
		"del\x7f":       `del\x7f`,
		"\u2028\u2029":  `\u2028\u2029`,
		"\ufeffbom":     `\ufeffbom`,
		"\u200e\u200f":  `\u200e\u200f`,
		"\ue000":        `\ue000`,
		"\x1b]0;T\a":    `\x1b]0;T\x07`,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestText: line breaks and tabs stay, every other control is spelt, and
// spelling twice changes nothing.
func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"a\n\thint: b":                            "a\n\thint: b",
		"x\x1b[2J\ty\r\nz\x07":                    `x\x1b[2J` + "\t" + `y\x0d` + "\n" + `z\x07`,
		"clean text, ünïcode\tok":                 "clean text, ünïcode\tok",
		"link to /x\x1b]52;c;cHduZWQ=\x07\x1b[2J": `link to /x\x1b]52;c;cHduZWQ=\x07\x1b[2J`,
		"a\r\n\tb\u202e":                          `a\x0d` + "\n\t" + `b\u202e`,
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if got := Text(want); got != want {
			t.Errorf("Text is not idempotent on %q: %q", want, got)
		}
	}
}
