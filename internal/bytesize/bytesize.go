// Package bytesize reads and writes sizes as policies spell them: a
// number with an optional k, m or g suffix, powers of 1024 ("256m").
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var shifts = map[byte]uint{'k': 10, 'm': 20, 'g': 30}

// Parse reads "256m" as bytes. Zero, signs, spaces and other suffixes are
// refused.
func Parse(s string) (int64, error) {
	digits, shift := s, uint(0)
	if n := len(s); n > 0 {
		if sh, ok := shifts[strings.ToLower(s[n-1:])[0]]; ok {
			digits, shift = s[:n-1], sh
		}
	}
	if digits == "" || digits[0] < '1' || digits[0] > '9' || strings.Trim(digits, "0123456789") != "" {
		return 0, fmt.Errorf("invalid size %q: write a number with an optional k, m or g suffix", s)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q: %v", s, err)
	}
	if n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n << shift, nil
}

// Format writes bytes in the largest unit that divides them: 256m.
func Format(b int64) string {
	for _, u := range []struct {
		suffix string
		shift  uint
	}{{"g", 30}, {"m", 20}, {"k", 10}} {
		if b >= 1<<u.shift && b%(1<<u.shift) == 0 {
			return strconv.FormatInt(b>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(b, 10)
}
