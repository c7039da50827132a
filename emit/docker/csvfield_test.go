package docker

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// FuzzCSVField: a --mount value's field is what encoding/csv writes.
func FuzzCSVField(f *testing.F) {
	for _, s := range []string{"", "a", "a,b", `a"b`, " a", "\u00a0a", `\.`, "a\nb", "a\r\nb", "\"", "source=/x y", "target=/a,readonly"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		if err := w.Write([]string{s}); err != nil {
			return // csv refuses it: so does emit.CheckSafe, before
		}
		w.Flush()
		if want := strings.TrimSuffix(b.String(), "\n"); csvField(s) != want {
			t.Errorf("csvField(%q) = %q, encoding/csv writes %q", s, csvField(s), want)
		}
	})
}
