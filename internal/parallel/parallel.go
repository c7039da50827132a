// Package parallel runs independent pieces of one job on every core: a
// build or lint of many servers does the same work once per server.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls f(i) for every i in [0, n), on up to GOMAXPROCS goroutines
// that take the next i as they finish one, and returns when every call
// has. f must be safe to call concurrently; results go in slots indexed by
// i, so their order does not depend on the scheduling.
func For(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// Memo holds a result per key, computed once however many goroutines ask
// for it: the first computes it, the others wait for that result. The zero
// Memo is ready.
type Memo[V any] struct {
	mu sync.Mutex
	m  map[string]*memoEntry[V]
}

type memoEntry[V any] struct {
	once sync.Once
	v    V
}

// Get returns the result for key, calling compute for the first ask.
func (m *Memo[V]) Get(key string, compute func() V) V {
	m.mu.Lock()
	if m.m == nil {
		m.m = map[string]*memoEntry[V]{}
	}
	e := m.m[key]
	if e == nil {
		e = &memoEntry[V]{}
		m.m[key] = e
	}
	m.mu.Unlock()
	e.once.Do(func() { e.v = compute() })
	return e.v
}
