package schema

import (
	"strings"
	"testing"
)

// TestPolicyIsText: a byte that is not UTF-8, or a control character, is
// refused at its line and column in every format (the YAML decoder gave
// no line, Jsonnet read U+FFFD in its place).
func TestPolicyIsText(t *testing.T) {
	for _, c := range []struct{ file, src, want string }{
		{"p.yaml", "version: \"v1\"\nservers:\n  a\x00b: {}\n", "p.yaml:3:4: control character U+0000"},
		{"p.yaml", "version: \"v1\"\nservers:\n  \"a\xffb\": {}\n", "p.yaml:3:5: byte 0xff is not UTF-8 text"},
		{"p.json", "{\"version\": \"v1\",\n\"servers\": {\"\xc3\": {}}}", "p.json:2:14: byte 0xc3 is not UTF-8 text"},
		{"p.cue", "version: \"v1\"\x01\n", "p.cue:1:14: control character U+0001"},
		{"p.jsonnet", "{version: \"v1\", servers: {\"a\xffb\": {}}}", "p.jsonnet:1:29: byte 0xff is not UTF-8 text"},
	} {
		_, err := LoadBytes(c.file, []byte(c.src), ".")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: want %q, got %v", c.file, c.src, c.want, err)
		}
	}
}
