package mcpcall

// A hostile server: what it sends is chosen to cost its caller, and the
// caller's memory must stay bounded whatever it sends. The test binary
// plays the server (MCPCALL_HOSTILE names the mode), speaking JSON-RPC
// lines itself so it can send what no SDK server would.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("MCPCALL_HOSTILE"); mode != "" {
		hostileServer(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func hostileServer(mode string) {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	sendRaw := func(b []byte) {
		outMu.Lock()
		out.Write(b)
		out.Flush()
		outMu.Unlock()
	}
	send := func(v any) {
		b, _ := json.Marshal(v)
		sendRaw(append(b, '\n'))
	}
	// pings sends ping requests without end; pad makes each id (and so
	// each reply) that long; "request-flood-big" gives each 6 MiB of
	// params. With replies, it waits for a reply to each before it sends
	// the next.
	replies := make(chan struct{}, 1)
	pings := func(pad int, replies chan struct{}) {
		var params string
		if mode == "request-flood-big" {
			params = `,"params":{"x":"` + strings.Repeat("p", 6<<20) + `"}`
		}
		for i := 0; ; i++ {
			sendRaw(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":"s%d%s","method":"ping"%s}`+"\n", i, strings.Repeat("-", pad), params))
			if replies != nil {
				<-replies
			}
		}
	}
	flooding := false
	if mode == "stderr-flood" {
		go func() {
			line := []byte(strings.Repeat("e", 1<<20)) // no newline: one endless line
			for {
				os.Stderr.Write(line)
			}
		}()
	}
	page := 0
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // a notification
		}
		if req.Method == "" {
			replies <- struct{}{} // a reply to a ping
			continue
		}
		if strings.HasPrefix(mode, "request-flood") && (req.Method == "tools/list" || req.Method == "tools/call") && !flooding {
			// Past the handshake: answer tools/list with a first page (so
			// that the caller asks for the next), then send the caller
			// pings without end. "request-flood" floods and never reads
			// its stdin again; its long ids make each reply 1 KiB, so the
			// pipe to it is soon full. "request-flood-big" does the same
			// with pings of 6 MiB. "request-flood-reading" plays
			// ping-pong, as fast as the caller answers.
			flooding = true
			if req.Method == "tools/list" {
				send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"tools": []any{map[string]any{"name": "first", "inputSchema": map[string]any{"type": "object"}}}, "nextCursor": "1"}})
			}
			switch mode {
			case "request-flood":
				pings(1<<10, nil)
			case "request-flood-big":
				pings(16<<10, nil) // four replies fill a pipe of 64 KiB
			}
			go pings(0, replies)
			continue
		}
		if flooding {
			continue // the caller waits for an answer while it is pinged
		}
		if mode == "notification-flood" && (req.Method == "tools/list" || req.Method == "tools/call") {
			// Never answer; send notifications without end instead, each
			// cheap to read and dear to handle: its data is 50,000 small
			// objects, which the SDK would decode one by one.
			objs := make([]any, 50000)
			for i := range objs {
				objs[i] = map[string]any{"a": []any{1, 2}}
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": objs}})
			for b = append(b, '\n'); ; {
				out.Write(b)
			}
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "hostile", "version": "1"}}
		case "tools/list":
			// Pages without end: 500 tools each, always another cursor.
			var tools []any
			for i := range 500 {
				tools = append(tools, map[string]any{"name": fmt.Sprintf("t%d-%d", page, i), "description": strings.Repeat("d", 1<<10), "inputSchema": map[string]any{"type": "object"}})
			}
			page++
			result = map[string]any{"tools": tools, "nextCursor": fmt.Sprint(page)}
		case "tools/call":
			if mode == "stderr-flood" {
				time.Sleep(2 * time.Second) // flood while the caller waits
			}
			result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "no"}})
			continue
		}
		send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}

func hostile(t *testing.T, mode string) (argv, env []string) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{self}, append(os.Environ(), "MCPCALL_HOSTILE="+mode)
}

// heapGrowth runs f and returns how much the heap in use grew at most,
// sampled while f runs.
func heapGrowth(f func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	done := make(chan struct{})
	go func() { f(); close(done) }()
	for {
		select {
		case <-done:
			return peak
		case <-time.After(20 * time.Millisecond):
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > peak {
				peak = ms.HeapInuse - base
			}
		}
	}
}

// TestStderrFloodIsBounded: a server writing its stderr as fast as it can
// while the caller waits for an answer (hundreds of MB a second) costs the
// caller StderrKept of it: the red team's server took prove to an out of
// memory crash, whose cleanup then never ran.
func TestStderrFloodIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	argv, env := hostile(t, "stderr-flood")
	var res Result
	var err error
	grew := heapGrowth(func() {
		res, err = Call(context.Background(), argv, env, "anything", nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "done" || len(res.Stderr) != StderrKept {
		t.Errorf("text %q, %d bytes of stderr; want done, %d", res.Text, len(res.Stderr), StderrKept)
	}
	if grew > 64<<20 {
		t.Errorf("the heap grew by %d MiB while the server flooded its stderr", grew>>20)
	}
}

// TestEndlessToolListIsBounded: a server that pages tools/list without
// end is refused after MaxTools; FindTool stops at the tool it looks for.
func TestEndlessToolListIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	argv, env := hostile(t, "pages")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var tools []Tool
	var err error
	grew := heapGrowth(func() { tools, _, err = ListTools(ctx, argv, env) })
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d tools", MaxTools)) || ctx.Err() != nil {
		t.Errorf("%d tools, %v; want refused past %d tools, well before the deadline", len(tools), err, MaxTools)
	}
	if grew > 128<<20 {
		t.Errorf("the heap grew by %d MiB", grew>>20)
	}
	tool, _, err := FindTool(ctx, argv, env, "t1-7")
	if err != nil || tool == nil || tool.Name != "t1-7" {
		t.Errorf("FindTool: %v, %v", tool, err)
	}
	tool, _, err = FindTool(ctx, argv, env, "absent")
	if err == nil || tool != nil {
		t.Errorf("FindTool of a tool never listed: %v, %v; want refused past %d tools", tool, err, MaxTools)
	}
}

// TestRequestFloodIsBounded: a server that sends requests (pings) without
// end costs the caller a goroutine per request until its reply is written.
// One that never reads its stdin, so that no reply is ever written, took
// the caller's heap to GiBs in seconds; one that reads the replies keeps
// the session busy answering. Past MaxRequestsInFlight unanswered (or
// MaxRequestBytesInFlight of them), or MaxRequests in all, the session
// ends with an error, promptly.
func TestRequestFloodIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	for _, tc := range []struct {
		mode, want string
	}{
		{"request-flood", fmt.Sprintf("more than %d requests not answered yet", MaxRequestsInFlight)},
		{"request-flood-big", fmt.Sprintf("hold more than %d MiB", MaxRequestBytesInFlight>>20)},
		{"request-flood-reading", fmt.Sprintf("more than %d requests in one session", MaxRequests)},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			argv, env := hostile(t, tc.mode)
			heapMax := uint64(16 << 20)
			if tc.mode == "request-flood-big" {
				// What is in flight, the message being read (a 6 MiB
				// one, in a decoder's buffer and decoded), and the
				// garbage of those read before, not yet collected.
				heapMax = 8 * MaxRequestBytesInFlight
			}
			for _, what := range entryPoints() {
				var err error
				start := time.Now()
				grew, goroutines := boundedHeap(t, 10*time.Second, func(ctx context.Context) { err = callOrFind(ctx, what, argv, env) })
				took := time.Since(start)
				t.Logf("%s: %v after %v; heap grew at most %d KiB, %d goroutines at most", what, err, took.Round(time.Millisecond), grew>>10, goroutines)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v; want %q", what, err, tc.want)
				}
				// No bound on the clock (a loaded machine stretches it):
				// a flood not refused ends at boundedHeap's deadline, with
				// that error, not the refusal wanted above.
				if grew > heapMax {
					t.Errorf("%s: the heap grew by %d MiB while the server flooded it with requests", what, grew>>20)
				}
			}
		})
	}
}

// TestNotificationFloodIsBounded: notifications cost the SDK nothing per
// message but a place in a queue of its handler's, without bound: a
// server sending, without end, notifications that cost more to handle
// than to read grew the caller's heap by hundreds of MiB, and its Close
// waited for the queue to drain, past the caller's deadline. mcpcall's
// client handles no notification: they are dropped as they are read.
func TestNotificationFloodIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	argv, env := hostile(t, "notification-flood")
	for _, what := range entryPoints() {
		var err error
		start := time.Now()
		const deadline = 3 * time.Second
		grew, goroutines := boundedHeap(t, deadline, func(ctx context.Context) { err = callOrFind(ctx, what, argv, env) })
		took := time.Since(start)
		t.Logf("%s: %v after %v; heap grew at most %d KiB, %d goroutines at most", what, err, took.Round(time.Millisecond), grew>>10, goroutines)
		if err == nil || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
			t.Errorf("%s: %v; want the deadline passed", what, err)
		}
		// A Close that waits for the queue to drain never returns (the
		// flood has no end): a generous bound, as a loaded machine
		// stretches the clock.
		if took > deadline+20*time.Second {
			t.Errorf("%s took %v; want it to end at its deadline, %v", what, took, deadline)
		}
		if grew > 32<<20 {
			t.Errorf("%s: the heap grew by %d MiB while the server flooded it with notifications", what, grew>>20)
		}
	}
}

// boundedHeap runs f with a context that ends after timeout, or as soon
// as the heap in use has grown by 256 MiB — a test failing must not take
// its machine's memory with it — and returns how much the heap grew at
// most, and the most goroutines seen, sampled while f runs.
func boundedHeap(t *testing.T, timeout time.Duration, f func(context.Context)) (grew uint64, goroutines int) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	done := make(chan struct{})
	go func() { f(ctx); close(done) }()
	for {
		select {
		case <-done:
			return grew, goroutines
		case <-time.After(20 * time.Millisecond):
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > base && ms.HeapInuse-base > grew {
				grew = ms.HeapInuse - base
			}
			goroutines = max(goroutines, runtime.NumGoroutine())
			if grew > 256<<20 && ctx.Err() == nil {
				t.Logf("the heap grew by %d MiB (%d goroutines): cancelling", grew>>20, goroutines)
				cancel()
			}
		}
	}
}

// callOrFind puts a call to the server (what: "Call"), or reads its tools
// (what: "FindTool"): the two ways mcpcall talks to a server.
func callOrFind(ctx context.Context, what string, argv, env []string) error {
	if what == "Call" {
		_, err := Call(ctx, argv, env, "anything", nil)
		return err
	}
	_, _, err := FindTool(ctx, argv, env, "anything")
	return err
}

// entryPoints are the calls the flood tests drive: both, and under -short
// Call alone (each waits out the hostile server's exit; they share the
// transport and its bounds, and CI runs both).
func entryPoints() []string {
	if testing.Short() {
		return []string{"Call"}
	}
	return []string{"Call", "FindTool"}
}
