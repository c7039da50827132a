package launchlog

import (
	"bytes"
	"strings"
	"sync"
)

// TailLines and TailBytes bound what a record keeps of a server's stderr:
// its last lines, and no more bytes than that (a line is cut at its end).
const (
	TailLines = 40
	TailBytes = 8 << 10
)

// Tail is an io.Writer that keeps the last TailLines lines written to it,
// in at most TailBytes. Its memory is bounded whatever the server writes.
type Tail struct {
	mu      sync.Mutex
	lines   []string
	partial []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = append(t.partial, p...)
			if len(t.partial) > TailBytes { // one endless line: keep its end
				t.partial = append(t.partial[:0], t.partial[len(t.partial)-TailBytes:]...)
			}
			break
		}
		t.partial = append(t.partial, p[:i]...)
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (t *Tail) push(l string) {
	if len(l) > TailBytes {
		l = l[len(l)-TailBytes:]
	}
	t.lines = append(t.lines, l)
	if len(t.lines) > 2*TailLines { // amortised: trimmed now and then
		t.lines = append(t.lines[:0], t.lines[len(t.lines)-TailLines:]...)
	}
}

// Lines are the last lines (an unfinished one last), within the bounds.
func (t *Tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	all := append([]string{}, t.lines...)
	if len(t.partial) > 0 {
		all = append(all, string(t.partial))
	}
	if len(all) > TailLines {
		all = all[len(all)-TailLines:]
	}
	size := 0
	for i := len(all) - 1; i >= 0; i-- {
		size += len(all[i]) + 1
		if size > TailBytes {
			return all[i+1:]
		}
	}
	return all
}

// String is the kept lines, joined.
func (t *Tail) String() string { return strings.Join(t.Lines(), "\n") }
