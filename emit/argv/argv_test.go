package argv

import (
	"regexp"
	"testing"
)

// TestIsWinAbs: the drive-path test is the pattern it replaced,
// ^[A-Za-z]:[\\/], on every string of up to three bytes around it.
func TestIsWinAbs(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z]:[\\/]`)
	alphabet := []byte{'C', 'c', 'z', 'Z', '@', '[', '`', '{', '0', ':', '\\', '/', 'x', 0x80}
	var try func(s []byte)
	try = func(s []byte) {
		if got, want := IsWinAbs(string(s)), re.MatchString(string(s)); got != want {
			t.Errorf("IsWinAbs(%q) = %v, the pattern says %v", s, got, want)
		}
		if len(s) == 4 {
			return
		}
		for _, c := range alphabet {
			try(append(s, c))
		}
	}
	try(nil)
}
