package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "4k": 4096, "256m": 256 << 20, "2G": 2 << 30, "10": 10} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0", "k", "01", "1t", "-1", "+1", " 1", "1 ", "1kk", "1.5m", "99999999999999999999g", "9223372036854775807k"} {
		if n, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %d, accepted", bad, n)
		}
	}
}

func TestFormat(t *testing.T) {
	for b, want := range map[int64]string{1: "1", 1024: "1k", 1536: "1536", 256 << 20: "256m", 1 << 30: "1g", 3 << 30: "3g"} {
		if got := Format(b); got != want {
			t.Errorf("Format(%d) = %q, want %q", b, got, want)
		}
		if b > 0 {
			if back, err := Parse(Format(b)); err != nil || back != b {
				t.Errorf("Parse(Format(%d)) = %d, %v", b, back, err)
			}
		}
	}
}
