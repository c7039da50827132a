package syncbuf

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	tail := &Tail{Max: 8}
	for _, w := range []string{"abc", "defgh", "ijk", "", "l"} {
		tail.Write([]byte(w))
	}
	if got := tail.String(); got != "efghijkl" || tail.Dropped() != 4 {
		t.Errorf("%q, %d dropped; want efghijkl, 4", got, tail.Dropped())
	}
	tail.Write([]byte(strings.Repeat("x", 20) + "12345678"))
	if got := tail.String(); got != "12345678" || tail.Dropped() != 32 {
		t.Errorf("%q, %d dropped; want 12345678, 32", got, tail.Dropped())
	}
	// Writing without end keeps the memory bounded.
	big := &Tail{Max: 1 << 10}
	chunk := []byte(strings.Repeat("y", 100))
	for range 100000 {
		big.Write(chunk)
	}
	if len(big.String()) != 1<<10 || cap(big.b) > 4<<10 {
		t.Errorf("kept %d bytes in an array of %d", len(big.String()), cap(big.b))
	}
	all := &Tail{}
	all.Write([]byte("abc"))
	all.Write([]byte("def"))
	if all.String() != "abcdef" || all.Dropped() != 0 {
		t.Errorf("Max 0: %q", all.String())
	}
}
