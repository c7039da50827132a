package credential

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// knownPrefixes are the fixed starts of token formats that libraries and
// servers check: a placeholder keeps them, so the server accepts it as
// the kind of token it expects. Longest first (sk-ant- before sk-).
var knownPrefixes = []string{
	"github_pat_", "sk-proj-", "sk-ant-", "glpat-", "xoxb-", "xoxp-", "xoxa-", "xapp-",
	"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "sk-", "AKIA", "ASIA", "AIza",
}

// MinPlaceholderBits is the randomness a placeholder holds at least:
// whoever has not seen it cannot guess it. 112 bits is the least security
// strength NIST SP 800-57 accepts; a classic GitLab token (glpat- and 20
// letters and digits, 119 bits drawn from them together) clears it, a
// 16-character key does not.
const MinPlaceholderBits = 112

const (
	lower  = "abcdefghijklmnopqrstuvwxyz"
	upper  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits = "0123456789"
)

// Placeholder is what the server holds in place of value: as long as it,
// with the same known prefix (ghp_, sk-ant-, ...), the same punctuation
// at the same places, and at every other place a random character of the
// same kind (a hex value stays hex; a letter stays a letter of its case,
// a digit a digit), so a library that checks a token's format accepts it.
// When keeping each character's kind leaves fewer than
// MinPlaceholderBits of randomness, the letters and digits are drawn from
// the kinds the value uses, together; a value too short for even that is
// refused: its placeholder could be guessed. Never equal to value. r is
// the randomness (crypto/rand.Reader).
func Placeholder(value string, r io.Reader) (string, error) {
	if value == "" {
		return "", errors.New("an empty value has no placeholder")
	}
	prefix := ""
	for _, p := range knownPrefixes {
		if strings.HasPrefix(value, p) && len(value) > len(p) {
			prefix = p
			break
		}
	}
	rest := value[len(prefix):]
	alphabets, bits := shape(rest)
	if bits < MinPlaceholderBits {
		alphabets, bits = widened(rest)
	}
	if bits < MinPlaceholderBits {
		return "", fmt.Errorf("a value of %d characters leaves %.0f bits of randomness for a placeholder of its shape, fewer than %d: it could be guessed (use a longer token)", len(value), bits, MinPlaceholderBits)
	}
	for {
		b := []byte(value)
		for i, a := range alphabets {
			if a == "" {
				continue // punctuation and anything not ASCII stay where they are
			}
			c, err := pick(r, a)
			if err != nil {
				return "", fmt.Errorf("placeholder: %v", err)
			}
			b[len(prefix)+i] = c
		}
		if s := string(b); s != value {
			return s, nil
		}
	}
}

// shape gives each byte of rest the alphabet its replacement is drawn
// from, keeping its kind ("" keeps the byte), and the randomness that
// holds in bits. A value whose letters are all hex digits of one case is
// hex throughout.
func shape(rest string) ([]string, float64) {
	hex := ""
	switch {
	case only(rest, digits+"abcdef"):
		hex = digits + "abcdef"
	case only(rest, digits+"ABCDEF"):
		hex = digits + "ABCDEF"
	}
	out := make([]string, len(rest))
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		switch {
		case hex != "" && isAlnum(c):
			out[i] = hex
		case 'a' <= c && c <= 'z':
			out[i] = lower
		case 'A' <= c && c <= 'Z':
			out[i] = upper
		case '0' <= c && c <= '9':
			out[i] = digits
		}
	}
	return out, entropy(out)
}

// widened draws every letter and digit of rest from the union of the
// kinds rest uses.
func widened(rest string) ([]string, float64) {
	var union string
	for _, k := range []string{lower, upper, digits} {
		if strings.ContainsAny(rest, k) {
			union += k
		}
	}
	out := make([]string, len(rest))
	for i := 0; i < len(rest); i++ {
		if isAlnum(rest[i]) {
			out[i] = union
		}
	}
	return out, entropy(out)
}

func entropy(alphabets []string) float64 {
	var bits float64
	for _, a := range alphabets {
		if a != "" {
			bits += math.Log2(float64(len(a)))
		}
	}
	return bits
}

// only reports whether every letter and digit of s is in set (and s has one).
func only(s, set string) bool {
	seen := false
	for i := 0; i < len(s); i++ {
		if !isAlnum(s[i]) {
			continue
		}
		if strings.IndexByte(set, s[i]) < 0 {
			return false
		}
		seen = true
	}
	return seen
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// pick draws one byte of alphabet uniformly: a random byte at or above
// the largest multiple of len(alphabet) is drawn again.
func pick(r io.Reader, alphabet string) (byte, error) {
	n := len(alphabet)
	limit := 256 - 256%n
	var b [1]byte
	for {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return 0, err
		}
		if int(b[0]) < limit {
			return alphabet[int(b[0])%n], nil
		}
	}
}
