// Package probe attempts file and network accesses and records what the
// kernel answered. It runs inside a sandbox in place of the server, so a
// denial it records is a property of the sandbox, not of any server's code.
package probe

import (
	"bufio"
	"bytes"
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
	UDP     Op = "udp"     // send one datagram to host:port
	// Fetch GETs a URL through the proxy the environment names
	// (HTTPS_PROXY...), as a server's HTTP library would: "ok" for a 2xx,
	// "http N" when the proxy or the server answered N. Certificates are
	// not verified: the question is whether the connection is carried.
	Fetch Op = "fetch"
	// Unix connects to a named unix socket (a path): the host's D-Bus,
	// docker.sock, an agent's socket.
	Unix Op = "unix"
	// Environ looks for a variable NAME in every /proc/PID/environ it can
	// read: "ok" when some process shows it (the invoker's environment
	// leaked in), ENOENT when none does.
	Environ Op = "environ"
	// Keyring searches the session keyring for the user key named by the
	// target and reads it: "ok" when the invoker's keyring is visible.
	Keyring Op = "keyring"
)

var ops = "read, write, create, list, connect, udp, fetch, unix, environ, keyring"

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
		return Attempt{}, fmt.Errorf("probe %q: want OP:TARGET (ops: %s)", s, ops)
	}
	switch Op(op) {
	case Read, Write, Create, List, Connect, UDP, Fetch, Unix, Environ, Keyring:
		return Attempt{Op(op), target}, nil
	}
	return Attempt{}, fmt.Errorf("probe %q: unknown op %q (ops: %s)", s, op, ops)
}

// Run performs an attempt.
func Run(a Attempt) Result {
	return Result{Attempt: a, Result: outcome(do(a))}
}

func do(a Attempt) error {
	switch a.Op {
	case Read:
		// Opened without waiting for a writer: a FIFO the server put where
		// the probe reads held prove forever (a red team); with no writer
		// the read is an end of file. One a writer holds open waits for
		// it, as a pipe on stdin does, bounded by prove's deadline.
		f, err := os.OpenFile(a.Target, os.O_RDONLY|syscall.O_NONBLOCK, 0)
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
		// Non-blocking too: a FIFO with no reader answers ENXIO at once.
		f, err := os.OpenFile(a.Target, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
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
	case UDP:
		c, err := net.Dial("udp", a.Target)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write([]byte("mcpolicy probe"))
		return err
	case Fetch:
		return fetch(a.Target)
	case Unix:
		c, err := net.DialTimeout("unix", a.Target, 2*time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	case Environ:
		return environ(a.Target)
	case Keyring:
		return keyring(a.Target)
	}
	return fmt.Errorf("unknown op %q", a.Op)
}

// environ reports ENOENT unless some readable /proc/PID/environ holds name.
func environ(name string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(kv, name+"=") {
				return nil
			}
		}
	}
	return unix.ENOENT
}

// fetcher performs Fetch; package probe/fetch sets it. The probe core
// links no HTTP client: the small launcher imports this package (its
// Landlock probe mode), and net/http and crypto/tls double its size and
// its start-up time.
var fetcher func(target string) error

// SetFetcher installs the Fetch implementation (package probe/fetch).
func SetFetcher(f func(target string) error) { fetcher = f }

func fetch(target string) error {
	if fetcher == nil {
		return errors.New("fetch is not linked into this program (import github.com/mcpolicy/mcpolicy/runtime/probe/fetch)")
	}
	return fetcher(target)
}

// HTTPStatus is an HTTP answer other than 2xx, reported as "http N".
type HTTPStatus int

func (h HTTPStatus) Error() string { return fmt.Sprintf("http %d", int(h)) }

// outcome names the errno under err, or describes err when there is none.
func outcome(err error) string {
	if err == nil {
		return "ok"
	}
	var hs HTTPStatus
	if errors.As(err, &hs) {
		return hs.Error()
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

// Decode reads Encode's JSON lines (blank lines skipped).
func Decode(out []byte) ([]Result, error) {
	var rs []Result
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r Result
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, fmt.Errorf("probe output line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs, sc.Err()
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
