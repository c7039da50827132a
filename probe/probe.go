// Package probe attempts file and network accesses and records what the
// kernel answered. It runs inside a sandbox in place of the server, so a
// denial it records is a property of the sandbox, not of any server's code.
package probe

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Op is one kind of access.
type Op string

const (
	Read    Op = "read"    // open read-only and read a byte
	Write   Op = "write"   // open an existing file for writing (no create)
	Create  Op = "create"  // create a new file
	List    Op = "list"    // read a directory's entries
	Connect Op = "connect" // TCP connect to host:port
)

// Attempt is one access to try.
type Attempt struct {
	Op     Op     `json:"op"`
	Target string `json:"target"`
}

// Result is what the kernel said: "ok" or an errno name such as "ENOENT".
type Result struct {
	Attempt
	Result string `json:"result"`
}

// ParseAttempt reads "op:target", e.g. "read:/etc/shadow".
func ParseAttempt(s string) (Attempt, error) {
	op, target, ok := strings.Cut(s, ":")
	if !ok || target == "" {
		return Attempt{}, fmt.Errorf("probe %q: want OP:TARGET (ops: read, write, create, list, connect)", s)
	}
	switch Op(op) {
	case Read, Write, Create, List, Connect:
		return Attempt{Op(op), target}, nil
	}
	return Attempt{}, fmt.Errorf("probe %q: unknown op %q (ops: read, write, create, list, connect)", s, op)
}

// Run performs an attempt.
func Run(a Attempt) Result {
	return Result{Attempt: a, Result: outcome(do(a))}
}

func do(a Attempt) error {
	switch a.Op {
	case Read:
		f, err := os.Open(a.Target)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = f.Read(make([]byte, 1))
		if err == io.EOF {
			err = nil
		}
		return err
	case Write:
		f, err := os.OpenFile(a.Target, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		return f.Close() // nothing is written: opening for write is the question
	case Create:
		f, err := os.OpenFile(a.Target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		f.Close()
		return os.Remove(a.Target)
	case List:
		_, err := os.ReadDir(a.Target)
		return err
	case Connect:
		c, err := net.DialTimeout("tcp", a.Target, 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	}
	return fmt.Errorf("unknown op %q", a.Op)
}

// outcome names the errno under err, or describes err when there is none.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
		return fmt.Sprintf("errno %d", int(errno))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return "error: " + err.Error()
}

// Encode writes results as JSON lines.
func Encode(w io.Writer, rs []Result) error {
	enc := json.NewEncoder(w)
	for _, r := range rs {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}
