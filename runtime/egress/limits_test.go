package egress

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/allowlist"
	"github.com/mcpolicy/mcpolicy/internal/syncbuf"
)

// deniedConnect sends a CONNECT the allowlist refuses on c and reads the
// answer's status.
func deniedConnect(c net.Conn, host string) (int, error) {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "CONNECT %s:443 HTTP/1.1\r\n\r\n", host); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestServeBoundsConnections: the proxy runs on the host, outside the
// sandbox's limits, so a server that opens connections and sends nothing
// holds at most MaxConns of them: the next one is not served until one of
// those ends.
func TestServeBoundsConnections(t *testing.T) {
	p, _, _ := redteamProxy(t)
	p2 := &Proxy{Allow: p.Allow, Resolve: p.Resolve, MaxConns: 4}
	addr := serve(t, p2)
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	extra, err := net.Dial("tcp", addr) // completes in the kernel's backlog
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	answered := make(chan error, 1)
	go func() {
		status, err := deniedConnect(extra, "evil.test")
		if err == nil && status != http.StatusForbidden {
			err = fmt.Errorf("status %d", status)
		}
		answered <- err
	}()
	select {
	case err := <-answered:
		t.Fatalf("a fifth connection was served while four were held (%v): connections are not bounded", err)
	case <-time.After(300 * time.Millisecond):
	}
	idle[0].Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fifth connection was not served once one of the four ended")
	}
}

// TestServeBoundsHeaders: a request's headers are bounded far below the
// HTTP server's default of 1 MiB, which held by DefaultMaxConns
// connections would be a quarter of a GiB of the host's memory.
func TestServeBoundsHeaders(t *testing.T) {
	_, log, addr := redteamProxy(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go fmt.Fprintf(c, "CONNECT evil.test:443 HTTP/1.1\r\nX-Pad: %s\r\n\r\n", strings.Repeat("a", maxHeaderBytes+8<<10))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("status %d for %d bytes of headers, want 431", resp.StatusCode, maxHeaderBytes+8<<10)
	}
	if log.String() != "" {
		t.Errorf("logged: %q", log.String())
	}
}

// TestLogLimit: each denial a server causes is a line on the host's disk.
// The log stops growing at its limit, counting what the file held when the
// proxy started (runs append to one file): one line says it is full, the
// rest are counted, and the count is the last line once the proxy stops.
func TestLogLimit(t *testing.T) {
	const limit = 8 << 10
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	held := strings.Repeat("x", 2<<10) + "\n" // an earlier run's lines
	if err := os.WriteFile(path, []byte(held), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := OpenLog(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, _, _ := redteamProxy(t)
	p2 := &Proxy{Allow: p.Allow, Resolve: p.Resolve, Log: f, LogLimit: limit}
	addr := serve(t, p2)
	const n = 200 // about 60 KiB of lines
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if status, err := deniedConnect(c, fmt.Sprintf("h%d.evil.test", i)); err != nil || status != http.StatusForbidden {
			t.Fatalf("request %d: %d, %v", i, status, err)
		}
		c.Close()
	}
	p2.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimPrefix(string(data), held), "\n")
	lines = lines[:len(lines)-1]
	last := lines[len(lines)-1]
	if len(data)-len(last) > limit {
		t.Errorf("the log holds %d bytes before its last line, past its limit of %d", len(data)-len(last), limit)
	}
	var decisions, notices int
	var final Decision
	for i, l := range lines {
		var d Decision
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("line %d: %v: %q", i, err, l)
		}
		switch d.Action {
		case "deny":
			if notices > 0 { // a shorter line would still fit: it must not be written
				t.Errorf("line %d, a decision after the log said it was full: %q", i, l)
			}
			decisions++
		case LogFull:
			notices++
			final = d
		default:
			t.Errorf("line %d: %q", i, l)
		}
	}
	if notices != 2 {
		t.Errorf("%d log-full lines, want 2 (when it filled, when the proxy stopped)", notices)
	}
	dropped := p2.NotLogged()
	if decisions == 0 || dropped == 0 || decisions+dropped != n {
		t.Errorf("%d decisions logged + %d not = %d, want %d, both > 0", decisions, dropped, decisions+dropped, n)
	}
	if want := fmt.Sprintf("%d decisions were not logged", dropped); !strings.Contains(final.Reason, want) {
		t.Errorf("last line %q does not say %q", last, want)
	}
}

// TestLogLimitNone: a negative limit (--log-max 0) logs everything.
func TestLogLimitNone(t *testing.T) {
	p0, _, _ := redteamProxy(t)
	log := &syncbuf.Buffer{}
	p := &Proxy{Allow: p0.Allow, Resolve: p0.Resolve, Log: log, LogLimit: -1}
	addr := serve(t, p)
	for i := range 50 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		deniedConnect(c, fmt.Sprintf("h%d.evil.test", i))
		c.Close()
	}
	p.Close()
	if ds := checkLog(t, log.String()); len(ds) != 50 || p.NotLogged() != 0 {
		t.Errorf("%d decisions logged, %d not; want 50, 0", len(ds), p.NotLogged())
	}
}

// TestLogLimitSharedFile: runs of one server append to one file at once;
// the limit is the file's, not each run's.
func TestLogLimitSharedFile(t *testing.T) {
	const limit = 8 << 10
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	p0, _, _ := redteamProxy(t)
	var addrs []string
	var proxies []*Proxy
	for range 3 {
		f, err := OpenLog(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p := &Proxy{Allow: p0.Allow, Resolve: p0.Resolve, Log: f, LogLimit: limit}
		proxies = append(proxies, p)
		addrs = append(addrs, serve(t, p))
	}
	for i := range 150 {
		c, err := net.Dial("tcp", addrs[i%3])
		if err != nil {
			t.Fatal(err)
		}
		deniedConnect(c, fmt.Sprintf("h%d.evil.test", i))
		c.Close()
	}
	for _, p := range proxies {
		p.Close()
	}
	data, _ := os.ReadFile(path)
	// Each proxy adds at most its notice and its count past the limit.
	if max := limit + 3*2*logNoticeRoom/2; len(data) > max {
		t.Errorf("three proxies wrote %d bytes to one log limited to %d", len(data), limit)
	}
}

// TestCloseEndsABlockedForward: an allowed destination that accepts a
// request and never reads its body held the forwarding request, and so
// Close (mcpolicy run's exit) forever: the red team's server uploaded to
// one, and run never returned. Close cancels what a request waits on.
func TestCloseEndsABlockedForward(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepted, never read
		}
	}()
	port := up.Addr().(*net.TCPAddr).Port
	allow, err := allowlist.Parse([]string{fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Allow: allow}
	addr := serve(t, p)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST http://127.0.0.1:%d/ HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", port, 1<<30)
	go func() { // as much as the kernel's buffers take, then blocked
		chunk := make([]byte, 64<<10)
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the proxy is forwarding, blocked on the destination
	closed := make(chan struct{})
	go func() { p.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return: a request blocked on its destination holds it")
	}
}
