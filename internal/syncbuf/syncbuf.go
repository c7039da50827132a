// Package syncbuf is a buffer that goroutines may write while another
// reads it: a child process's stderr, an egress proxy's decision log.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer behind a mutex. The zero value is empty and
// ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Tail keeps the last Max bytes written (all of them for Max <= 0) and
// counts the rest: what a process the caller does not trust writes, when
// only its end is read (a server's stderr, quoted in an error or a
// report), so writing without end costs the reader no more than Max.
type Tail struct {
	Max int

	mu      sync.Mutex
	b       []byte
	dropped int64
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if t.Max > 0 && len(p) >= t.Max {
		t.dropped += int64(len(t.b) + len(p) - t.Max)
		t.b = append(t.b[:0], p[len(p)-t.Max:]...)
		return n, nil
	}
	t.b = append(t.b, p...)
	if over := len(t.b) - t.Max; t.Max > 0 && over > 0 {
		// Shift rather than reslice, so the array does not grow without end.
		t.b = t.b[:copy(t.b, t.b[over:])]
		t.dropped += int64(over)
	}
	return n, nil
}

// String returns the bytes kept.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// Dropped is how many bytes were written before the ones kept.
func (t *Tail) Dropped() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}
