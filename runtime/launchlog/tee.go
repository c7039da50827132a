package launchlog

import (
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Tee is the stderr a launcher hands the sandbox it stays beside: a pipe
// whose every byte is passed on to the real stderr unchanged, as it
// comes, and kept in a Tail. stdin and stdout are never teed: they are
// MCP's transport, and stay the client's own pipes.
type Tee struct {
	W    *os.File // the child's stderr
	r    *os.File
	done chan struct{}
}

// NewTee starts copying a new pipe to dst and into tail.
func NewTee(dst io.Writer, tail *Tail) (*Tee, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// A client that closed its end of stderr must not end the launcher by
	// SIGPIPE (Go's default for a write to fd 2), and with it the sandbox:
	// with a handler the write fails instead. A handler, not SIG_IGN: the
	// child, which execs, gets the default back, as it had before.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	t := &Tee{W: w, r: r, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				dst.Write(buf[:n]) // a client that closed its stderr loses it; the server goes on
				tail.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return t, nil
}

// Started closes this process's copy of the write end, once the child
// holds its own: the copy ends when the child's side closes.
func (t *Tee) Started() { t.W.Close() }

// drainWait bounds the wait for what the sandbox still had in the pipe
// once its first process ended: anything left holding the write end (a
// daemon without a PID namespace) is not waited for.
const drainWait = 500 * time.Millisecond

// Finish waits until everything written was passed on (or drainWait),
// then closes the pipe.
func (t *Tee) Finish() {
	t.W.Close()
	select {
	case <-t.done:
	case <-time.After(drainWait):
		t.r.SetReadDeadline(time.Now())
		<-t.done
	}
	t.r.Close()
}
