package credential

import (
	"bytes"
	"crypto/rand"
	"strings"
	"testing"
)

// kind is a byte's class as a format check sees it.
func kind(c byte) string {
	switch {
	case 'a' <= c && c <= 'z':
		return "a"
	case 'A' <= c && c <= 'Z':
		return "A"
	case '0' <= c && c <= '9':
		return "0"
	}
	return string(c)
}

// TestPlaceholderShape: the placeholder keeps the value's length, its
// known prefix, its punctuation where it is, and each letter's and
// digit's kind (hex stays hex), and is never the value.
func TestPlaceholderShape(t *testing.T) {
	for _, c := range []struct {
		name, value, prefix string
		hex                 bool
	}{
		{"classic github", "ghp_" + strings.Repeat("aB3", 12), "ghp_", false},
		{"fine-grained github", "github_pat_11ABCDEFG0abcdefghijkl_" + strings.Repeat("xY9z", 15), "github_pat_", false},
		{"oauth github", "gho_16C7e42F292c6912E7710c838347Ae178B4a", "gho_", false},
		{"openai", "sk-proj-" + strings.Repeat("Ab1-", 12), "sk-proj-", false},
		{"anthropic", "sk-ant-api03-" + strings.Repeat("AbCd_12-", 10), "sk-ant-", false},
		{"slack", "xoxb-1234567890123-1234567890123-" + strings.Repeat("aBc", 10), "xoxb-", false},
		{"gitlab", "glpat-" + strings.Repeat("xY7z", 8), "glpat-", false},
		{"aws secret", "AKIA" + strings.Repeat("ABCDEFGH12345678", 2), "AKIA", false},
		{"hex lower", "0123456789abcdef0123456789abcdef01234567", "", true},
		{"hex upper", "0123456789ABCDEF0123456789ABCDEF", "", true},
		{"base64 with padding", "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo0MTIz/+==", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ph, err := Placeholder(c.value, rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			if ph == c.value {
				t.Fatal("the placeholder is the value")
			}
			if len(ph) != len(c.value) {
				t.Fatalf("length %d, the value's %d", len(ph), len(c.value))
			}
			if !strings.HasPrefix(ph, c.prefix) {
				t.Errorf("%q lost the prefix %q", ph, c.prefix)
			}
			for i := range len(ph) {
				if c.hex {
					if !strings.ContainsRune("0123456789abcdefABCDEF", rune(ph[i])) || kind(ph[i]) == "a" && kind(c.value[i]) == "A" || kind(ph[i]) == "A" && kind(c.value[i]) == "a" {
						t.Errorf("byte %d: %q, not hex of the value's case", i, ph[i])
					}
					continue
				}
				if kind(ph[i]) != kind(c.value[i]) {
					t.Errorf("byte %d: %q for %q: another kind", i, ph[i], c.value[i])
				}
			}
		})
	}
}

// TestPlaceholderRandom: two placeholders of one value differ, and
// differ from the value in most places (the rest is drawn afresh).
func TestPlaceholderRandom(t *testing.T) {
	v := "ghp_" + strings.Repeat("aB3", 12)
	seen := map[string]bool{}
	for range 100 {
		ph, err := Placeholder(v, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		if seen[ph] {
			t.Fatalf("%q twice", ph)
		}
		seen[ph] = true
		same := 0
		for i := 4; i < len(v); i++ {
			if ph[i] == v[i] {
				same++
			}
		}
		if same > len(v)/2 {
			t.Errorf("%q keeps %d of the value's %d random characters", ph, same, len(v)-4)
		}
	}
}

// TestPlaceholderWidens: a value whose per-kind shape holds fewer than
// MinPlaceholderBits draws its letters and digits from its kinds together; one
// too short for that is refused, with its size in the message.
func TestPlaceholderWidens(t *testing.T) {
	// 26 upper letters and digits in a fixed pattern: 26 positions of
	// 36 characters hold 134 bits; by kind (13 letters, 13 digits) 104.
	v := strings.Repeat("A1", 13)
	ph, err := Placeholder(v, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for i := range len(ph) {
		if k := kind(ph[i]); k != "A" && k != "0" {
			t.Errorf("byte %d: %q, outside the value's kinds", i, ph[i])
		}
	}
	// A classic GitLab token: 86 bits by kind, 119 drawn from its kinds
	// together.
	gl := "glpat-xY7zA9bC2dE4fG6hJ8kL"
	if ph, err := Placeholder(gl, rand.Reader); err != nil || len(ph) != len(gl) || !strings.HasPrefix(ph, "glpat-") || ph == gl {
		t.Errorf("%s: %q, %v; want a placeholder of its length and prefix", gl, ph, err)
	}
	for _, short := range []string{"hunter2", "AKIAIOSFODNN7EXAMPLE", "0123456789abcdef"} {
		if _, err := Placeholder(short, rand.Reader); err == nil || !strings.Contains(err.Error(), "could be guessed") {
			t.Errorf("%s: %v, want a refusal", short, err)
		}
	}
	if _, err := Placeholder("", rand.Reader); err == nil {
		t.Error("an empty value: no error")
	}
}

// TestPlaceholderNeverEqual: randomness that reproduces the value is
// drawn again, never returned.
func TestPlaceholderNeverEqual(t *testing.T) {
	v := strings.Repeat("g", 30) // 141 bits by kind (not hex: g is no hex digit)
	// The first 30 bytes give "g" each time (6 % 26), the next another letter.
	r := bytes.NewReader(append(bytes.Repeat([]byte{6}, 30), bytes.Repeat([]byte{7}, 30)...))
	ph, err := Placeholder(v, r)
	if err != nil {
		t.Fatal(err)
	}
	if ph != strings.Repeat("h", 30) {
		t.Errorf("got %q", ph)
	}
	// Randomness that ends is an error, not a weak placeholder.
	if _, err := Placeholder(v, bytes.NewReader(nil)); err == nil {
		t.Error("no randomness: no error")
	}
}

func TestCheckPair(t *testing.T) {
	v := "ghp_" + strings.Repeat("a1B2", 9)
	ph, err := Placeholder(v, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPair(v, ph); err != nil {
		t.Errorf("a drawn placeholder: %v", err)
	}
	for _, c := range []struct{ ph, want string }{
		{v, "is the value"},
		{ph[:len(ph)-1], "the value 40"},
		{"xyz_" + ph[4:], "prefix (ghp_)"},
		{ph[:10] + "\n" + ph[11:], "control character"},
		{"", "empty"},
	} {
		if err := CheckPair(v, c.ph); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckPair(%q): %v, want %q", c.ph, err, c.want)
		}
	}
	if err := CheckValue(strings.Repeat("a", MaxValue+1)); err == nil {
		t.Error("a value over MaxValue was taken")
	}
}
