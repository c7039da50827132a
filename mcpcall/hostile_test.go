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
	send := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
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
