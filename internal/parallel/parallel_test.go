package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestFor: every index is called exactly once, on one core and on many,
// for no work, less work than cores and more.
func TestFor(t *testing.T) {
	for _, procs := range []int{1, 4} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		for _, n := range []int{0, 1, 3, 1000} {
			calls := make([]atomic.Int32, n)
			For(n, func(i int) { calls[i].Add(1) })
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Fatalf("GOMAXPROCS=%d n=%d: f(%d) called %d times", procs, n, i, c)
				}
			}
		}
	}
}

// TestMemo: a key's result is computed once, however many ask at once,
// and every asker gets it; other keys have their own.
func TestMemo(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	var m Memo[int]
	var computed atomic.Int32
	got := make([]int, 100)
	For(len(got), func(i int) {
		got[i] = m.Get(string(rune('a'+i%2)), func() int { computed.Add(1); return i % 2 })
	})
	if c := computed.Load(); c != 2 {
		t.Errorf("computed %d times for 2 keys", c)
	}
	for i, v := range got {
		if v != i%2 {
			t.Fatalf("ask %d got %d, want %d", i, v, i%2)
		}
	}
}
