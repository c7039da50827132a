package toolrelay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// bigResult writes a tools/call result of n bytes of text to w, its id
// last as one SDK writes it, from a small buffer: the test holds none of
// it either. It returns the sha256 of what it wrote.
func bigResult(w io.Writer, id string, n int) ([32]byte, error) {
	h := sha256.New()
	out := io.MultiWriter(w, h)
	if _, err := io.WriteString(out, `{"result":{"content":[{"type":"text","text":"`); err != nil {
		return [32]byte{}, err
	}
	chunk := bytes.Repeat([]byte(`0123456789abcdef\"\\ {"id":1} `), 2048)
	for written := 0; written < n; written += len(chunk) {
		if _, err := out.Write(chunk); err != nil {
			return [32]byte{}, err
		}
	}
	if _, err := io.WriteString(out, `"}]},"jsonrpc":"2.0","id":`+id+"}\n"); err != nil {
		return [32]byte{}, err
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, nil
}

// hashLine reads one line, hashing it without holding it.
func hashLine(r io.ByteReader) ([32]byte, int, error) {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	n := 0
	for {
		c, err := r.ReadByte()
		if err != nil {
			return [32]byte{}, n, err
		}
		buf = append(buf, c)
		n++
		if len(buf) == cap(buf) || c == '\n' {
			h.Write(buf)
			buf = buf[:0]
		}
		if c == '\n' {
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			return sum, n, nil
		}
	}
}

// heapWatch samples HeapInuse until stopped and returns the most it saw
// above what it saw first.
func heapWatch() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak - base
	}
}

// heapBound is what relaying 100 MB may add to the heap: the 8 MiB line
// buffer twice over and the collector's lag (24 MiB measured quiet, 33
// under a loaded machine), far below the 100 MB a relay holding the line
// would take.
const heapBound = 48 << 20

// TestHostileServerLargeResult (red team): a 100 MB result passes byte for
// byte, while a tools/list answer is awaited (every line scanned) and
// while none is, in bounded memory.
func TestHostileServerLargeResult(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	for _, awaiting := range []bool{false, true} {
		t.Run(fmt.Sprintf("awaiting=%v", awaiting), func(t *testing.T) {
			h := newHarness(t, memoryPolicy())
			if awaiting {
				h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
				h.toServer()
			}
			h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_graph"}}` + "\n")
			h.toServer()
			stop := heapWatch()
			sent := make(chan [32]byte, 1)
			go func() {
				sum, err := bigResult(h.serverOut, "2", 100<<20)
				if err != nil {
					t.Error(err)
				}
				sent <- sum
			}()
			got, n, err := hashLine(h.clientOut)
			grew := stop()
			if err != nil {
				t.Fatal(err)
			}
			if got != <-sent {
				t.Errorf("the 100 MB result changed on the way (%d bytes came)", n)
			}
			if grew > heapBound {
				t.Errorf("the heap grew %d MiB relaying 100 MB, bound %d MiB", grew>>20, heapBound>>20)
			}
			t.Logf("%d bytes relayed, heap grew %.1f MiB", n, float64(grew)/(1<<20))
		})
	}
}

// TestHostileServerLongListAnswer (red team): a tools/list answer longer
// than MaxServerLine, its id first or last, fails closed: the line is cut
// before it can be read as an answer, and the tools/list gets an error.
func TestHostileServerLongListAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	pad := strings.Repeat("x", MaxServerLine+1<<20)
	for _, c := range []struct{ name, line string }{
		{"id first", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"delete_entities","description":"` + pad + `"}]}}`},
		{"id last", `{"result":{"tools":[{"name":"delete_entities","description":"` + pad + `"}]},"jsonrpc":"2.0","id":1}`},
		{"id twice", `{"id":77,"result":{"tools":[{"name":"delete_entities","description":"` + pad + `"}]},"jsonrpc":"2.0","id":1}`},
		{"a batch", `[{"result":{"tools":[{"name":"delete_entities","description":"` + pad + `"}]},"jsonrpc":"2.0","id":1}]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, memoryPolicy())
			h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			h.toServer()
			go io.WriteString(h.serverOut, c.line+"\n")
			cut := h.fromRelay()
			if json.Valid([]byte(strings.TrimSpace(cut))) && strings.TrimSpace(cut) != "" {
				t.Fatalf("the cut line is still JSON (%d bytes)", len(cut))
			}
			if strings.Contains(cut, "delete_entities") && !strings.HasPrefix(cut, "{\"result\"") && !strings.HasPrefix(cut, "{\"id\":77") {
				t.Errorf("the cut line shows the tool: %.100q", cut)
			}
			if c.name != "a batch" {
				if id, _, msg, _ := errorOf(t, h.fromRelay()); id != "1" || !strings.Contains(msg, "refused the server's answer") {
					t.Errorf("the tools/list got %s %q", id, msg)
				}
			}
			// A request of the server's with that id passes whole.
			req := `{"method":"sampling/createMessage","params":{"x":"` + pad + `"},"jsonrpc":"2.0","id":1}` + "\n"
			go io.WriteString(h.serverOut, req)
			if sum, n, err := hashLine(h.clientOut); err != nil || sum != sha256.Sum256([]byte(req)) {
				t.Errorf("a long server request with a tools/list's id: %d bytes of %d came, err %v", n, len(req), err)
			}
			// The pipe goes on.
			h.serve(`{"jsonrpc":"2.0","method":"notifications/x"}` + "\n")
			if got := h.fromRelay(); !strings.Contains(got, "notifications/x") {
				t.Errorf("after the cut: %q", got)
			}
		})
	}
}

// TestHostileServerFlood (red team): notifications and server requests
// interleaved with answers all pass, in order, and the heap stays bounded.
func TestHostileServerFlood(t *testing.T) {
	h := newHarness(t, memoryPolicy())
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.toServer()
	const n = 20000
	stop := heapWatch()
	go func() {
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":%d}}`+"\n", i)
			if i%1000 == 0 {
				fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{}}`+"\n", i)
				fmt.Fprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}\n", 1000+i) // never asked
				h.serverOut.Write(b.Bytes())
				b.Reset()
			}
		}
		b.WriteString(fmt.Sprintf(listAnswer, "1"))
		h.serverOut.Write(b.Bytes())
	}()
	notes := 0
	for {
		l := h.fromRelay()
		if strings.Contains(l, `"tools"`) {
			if got := toolNames(t, l); got != "read_graph,search_nodes" {
				t.Errorf("after the flood the list shows %s", got)
			}
			break
		}
		if strings.Contains(l, "notifications/message") {
			if !strings.Contains(l, fmt.Sprintf(`"data":%d}`, notes)) {
				t.Fatalf("notification %d out of order: %q", notes, l)
			}
			notes++
		}
	}
	if grew := stop(); grew > heapBound {
		t.Errorf("the heap grew %d MiB", grew>>20)
	}
	if notes != n {
		t.Errorf("%d notifications of %d passed", notes, n)
	}
}

// TestHostileClient (red team): a line over MaxClientLine, lines that are
// not JSON or not UTF-8, and a flood of tools/list requests are refused
// without reaching the server, and the pipe goes on.
func TestHostileClient(t *testing.T) {
	h := newHarness(t, memoryPolicy())
	go func() {
		var b bytes.Buffer
		b.WriteString(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/`)
		b.WriteString(strings.Repeat("a", MaxClientLine))
		b.WriteString("\"}}}\n")
		h.client.Write(b.Bytes())
	}()
	if id, code, msg, _ := errorOf(t, h.fromRelay()); id != `"big"` || code != codeInvalidReq || !strings.Contains(msg, "over 8 MiB") {
		t.Errorf("a long line: %s %d %q", id, code, msg)
	}
	for _, bad := range []string{"garbage\n", "{\"id\":3,\"method\":\"tools/call\"\xff}\n", `{"id":4,"method":"tools/call"}{"id":5}` + "\n", "\"tools/call\"\n", "[1,2\n"} {
		h.send(bad)
		if _, code, _, _ := errorOf(t, h.fromRelay()); code != codeParse {
			t.Errorf("%q answered with %d", bad, code)
		}
	}
	// An answered tools/list id reused for a ping: the ping's answer passes as is.
	h.send(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}` + "\n")
	h.toServer()
	h.serve(fmt.Sprintf(listAnswer, "9"))
	h.fromRelay()
	h.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	h.toServer()
	pong := `{"jsonrpc":"2.0","id":9,"result":{}}` + "\n"
	h.serve(pong)
	if got := h.fromRelay(); got != pong {
		t.Errorf("the reused id's answer became %q", got)
	}
	// A flood of tools/list the server never answers: remembered up to a
	// bound, refused past it, never forgotten.
	go func() {
		var b bytes.Buffer
		for i := 0; i < maxLists+10; i++ {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", 100000+i)
		}
		h.client.Write(b.Bytes())
	}()
	for i := 0; i < maxLists; i++ { // 9 was forgotten when the ping reused it
		h.toServer()
	}
	for i := 0; i < 10; i++ {
		if _, _, msg, _ := errorOf(t, h.fromRelay()); !strings.Contains(msg, "unanswered") {
			t.Errorf("past the bound: %q", msg)
		}
	}
	ping := `{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n"
	h.send(ping)
	if got := h.toServer(); got != ping {
		t.Errorf("after the refusals the server got %q", got)
	}
}

// TestEndsAndNoLeak: the client's EOF closes the server's stdin, the
// server's last answer still reaches the client, Run returns at the
// server's EOF, and no goroutine is left; the server ending first ends
// Run too, the client still open.
func TestEndsAndNoLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, serverFirst := range []bool{false, true} {
		cin, cw, _ := os.Pipe()
		cr, cout, _ := os.Pipe()
		sr, sin, _ := os.Pipe()
		sout, sw, _ := os.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- Run(context.Background(), Config{Policy: memoryPolicy(), ClientIn: cin, ClientOut: cout, ServerIn: sin, ServerOut: sout})
		}()
		if !serverFirst {
			cw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
			cw.Close()
			got, _ := io.ReadAll(sr) // ends when the relay closes the server's stdin
			if !bytes.Contains(got, []byte(`"ping"`)) {
				t.Errorf("the server got %q", got)
			}
			sw.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
		}
		sw.Close()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if !serverFirst {
			buf := make([]byte, 100)
			n, _ := cr.Read(buf)
			if !bytes.Contains(buf[:n], []byte(`"result"`)) {
				t.Errorf("the last answer did not come: %q", buf[:n])
			}
		}
		for _, f := range []*os.File{cin, cw, cr, cout, sr, sin, sout, sw} {
			f.Close()
		}
	}
	n := 0
	for range 200 { // goroutines that ended take a moment to be counted out
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Errorf("%d goroutines after Run returned, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
}

// TestHostileServerManyTools (red team): a tools/list of tens of thousands
// of tools the policy hides, listed again and again, logs each one once,
// and at most maxLogged of them.
func TestHostileServerManyTools(t *testing.T) {
	h := newHarness(t, pinnedPolicy("hide"))
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[{"name":"read_graph","description":"Read the graph","inputSchema":{"type":"object"}}`)
	for i := 0; i < 3*maxLogged; i++ {
		fmt.Fprintf(&b, `,{"name":"t%d"},{"name":"search_x%d"}`, i, i)
	}
	b.WriteString("]}}\n")
	for id := 1; id <= 3; id++ {
		h.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", id))
		h.toServer()
		go fmt.Fprintf(h.serverOut, b.String(), id)
		if got := toolNames(t, h.fromRelay()); got != "read_graph" {
			t.Errorf("shown: %.100s", got)
		}
	}
	if n := len(h.logged()); n > maxLogged+2 || n < maxLogged {
		t.Errorf("%d decisions logged for %d hidden tools listed thrice, bound %d", n, 6*maxLogged, maxLogged)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.decisions) > 0 {
		t.Logf("last: %+v", h.decisions[len(h.decisions)-1])
	}
}

// TestCancelNoLeak: a server that never ends and a client that never
// reads: cancelling ctx ends Run, closes the server's stdin and leaves no
// goroutine, even with the relay blocked writing to the client.
func TestCancelNoLeak(t *testing.T) {
	base := runtime.NumGoroutine()
	cin, cw, _ := os.Pipe()
	cr, cout, _ := os.Pipe()
	sr, sin, _ := os.Pipe()
	sout, sw, _ := os.Pipe()
	defer func() {
		for _, f := range []*os.File{cin, cw, cr, cout, sr, sin, sout, sw} {
			f.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Policy: memoryPolicy(), ClientIn: cin, ClientOut: cout, ServerIn: sin, ServerOut: sout})
	}()
	// Fill the client's pipe: the relay blocks writing to it.
	go func() {
		note := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 4000) + `"}}` + "\n")
		for range 1000 {
			if _, err := sw.Write(note); err != nil {
				return
			}
		}
	}()
	// Refusals the relay answers block too.
	go func() {
		for range 1000 {
			if _, err := cw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_x"}}` + "\n")); err != nil {
				return
			}
		}
	}()
	time.Sleep(100 * time.Millisecond) // let the pipes fill; what is asserted does not depend on it
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if _, err := io.ReadAll(sr); err != nil {
		t.Errorf("the server's stdin: %v", err)
	}
	cw.Close()
	sw.Close()
	n := 0
	for range 200 {
		if n = runtime.NumGoroutine(); n <= base {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Errorf("%d goroutines after Run returned, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
}
