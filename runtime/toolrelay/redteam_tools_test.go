package toolrelay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sentinel is an allowed call: when the server reads it next, nothing
// the relay refused reached the server before it.
const sentinel = `{"jsonrpc":"2.0","id":"sentinel","method":"tools/call","params":{"name":"read_graph"}}` + "\n"

// TestRedTeamClientCaseFolded (red team): a hostile or sloppy client spells
// a key of the message, of its params or of its arguments so that Go's
// encoding/json (which mcp-go servers, the filesystem server among them,
// decode requests with) reads it as the key the relay checks, while the
// relay would read it as another: the method ("METHOD"), the tool's name
// twice ("name" and "Name", the server reads the last), the arguments
// twice or alone under another case. Each is refused and none reaches
// the server.
func TestRedTeamClientCaseFolded(t *testing.T) {
	attacks := []string{
		`{"jsonrpc":"2.0","id":1,"METHOD":"tools/call","params":{"name":"delete_entities"}}`,
		`{"jsonrpc":"2.0","id":2,"Method":"tools/call","params":{"name":"delete_entities"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_graph","Name":"delete_entities"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_graph","N\u0061ME":"delete_entities"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/a"},"Arguments":{"path":"/etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","ARGUMENTS":{"path":"/etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"PATH":"/etc/passwd"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"read_graph"},"paramſ":{"name":"delete_entities"}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","Params":{"name":"delete_entities"},"params":{"name":"read_graph"}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/a","pat\u0048":"/etc/passwd"}}}`,
	}
	// The premise: what mcp-go's request decoding reads of each.
	for _, a := range attacks[:4] {
		var req struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(a), &req); err != nil || req.Method != "tools/call" || req.Params.Name != "delete_entities" {
			t.Fatalf("encoding/json reads %s as %+v (%v): the premise changed", a, req, err)
		}
	}
	h := newHarness(t, memoryPolicy())
	for i, a := range attacks {
		h.send(a + "\n")
		line := h.fromRelay()
		id, code, msg, _ := errorOf(t, line)
		if id != fmt.Sprint(i+1) || code == 0 {
			t.Errorf("%s: answered %q", a, line)
		}
		if !strings.Contains(msg, "ignores case") && !strings.Contains(msg, "denied") {
			t.Errorf("%s: refused for another reason: %s", a, msg)
		}
		h.send(sentinel)
		if got := h.toServer(); got != sentinel {
			t.Fatalf("%s reached the server: %q", a, got)
		}
	}
}

// TestRedTeamServerCaseFolded (red team): a server answers a tools/list
// with keys a case-insensitive client (mcp-go's) reads as "id", "result",
// "tools" or a tool's "name" while the relay would not: the denied tool
// never reaches the client.
func TestRedTeamServerCaseFolded(t *testing.T) {
	const all = `[{"name":"read_graph"},{"name":"delete_entities"}]`
	for _, answer := range []string{
		`{"jsonrpc":"2.0","ID":1,"result":{"tools":` + all + `}}`,
		`{"jsonrpc":"2.0","Id":1,"result":{"tools":` + all + `}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_graph"}]},"Result":{"tools":` + all + `}}`,
		`{"jsonrpc":"2.0","id":1,"Result":{"tools":` + all + `}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_graph"}],"Tools":` + all + `}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"TOOLS":` + all + `}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"read_graph","Name":"delete_entities"}]}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"NAME":"delete_entities"},{"name":"read_graph"}]}}`,
	} {
		h := newHarness(t, memoryPolicy())
		h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
		h.toServer()
		h.serve(answer + "\n")
		got := h.fromRelay()
		if strings.Contains(got, "delete_entities") {
			t.Errorf("server wrote %s\nthe client got %s", answer, got)
		}
	}
}

// TestRedTeamServerIDs (red team): a server answers a tools/list with an
// id that the relay and a real client match differently. The MCP Go SDK
// reads a number id as float64 and matches int64(f): 1.5 answers request
// 1 there; JavaScript's Number() reads "1", 1.0, 1e0 and " 0x1 " as 1.
// Every spelling a client takes for the tools/list's id is filtered.
func TestRedTeamServerIDs(t *testing.T) {
	for _, id := range []string{`1.5`, `1.999`, `1e0`, `1.0`, `10e-1`, `"1"`, `" 1 "`, `"0x1"`, `"1.5"`, `true`} {
		h := newHarness(t, memoryPolicy())
		h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
		h.toServer()
		h.serve(fmt.Sprintf(listAnswer, id))
		if got := h.fromRelay(); strings.Contains(got, "delete_entities") {
			t.Errorf("an answer with id %s passed unfiltered: %s", id, got)
		}
	}
}

// TestRedTeamServerSplitAnswer (red team): the MCP Go SDK's client reads
// JSON values from the stream, not lines (a newline inside a value is
// white space to it), so a tools/list answer split across lines, the
// id on a later line than the object's start, is one answer to it. Its
// first line, which ends inside a value, never reaches the client whole:
// what follows cannot complete it.
func TestRedTeamServerSplitAnswer(t *testing.T) {
	all := `{"tools":[{"name":"read_graph"},{"name":"delete_entities"}]}`
	long := strings.Repeat("a", MaxServerLine+1)
	for _, c := range []struct {
		name  string
		early bool // the first part is written before the tools/list is sent
		parts []string
	}{
		{"id on the second line", false, []string{`{"jsonrpc":"2.0",`, `"id":1,"result":` + all + `}`}},
		{"primed before the request", true, []string{`{"jsonrpc":"2.0",`, `"id":1,"result":` + all + `}`}},
		{"in a string", true, []string{`{"x":"`, `","id":1,"result":` + all + `}`}},
		{"a batch begun", true, []string{`[{"jsonrpc":"2.0",`, `"id":1,"result":` + all + `}]`}},
		{"one key a line", false, []string{`{`, `"jsonrpc":"2.0",`, `"id":1,`, `"result":` + all, `}`}},
		// The Go SDK ends a message at "\r" too; the relay's lines end at "\n".
		{"two messages split by a CR", false, []string{`{"jsonrpc":"2.0","method":"notifications/x"}` + "\r" + `{"jsonrpc":"2.0","id":1,"result":` + all + `}`}},
		{"a request, then a result for the list", false, []string{`{"jsonrpc":"2.0","id":5,"method":"ping"} {"jsonrpc":"2.0","id":1,"result":` + all + `}`}},
		{"a first line over MaxServerLine", true, []string{`{"jsonrpc":"2.0","x":"` + long + `",`, `"id":1,"result":` + all + `}`}},
		{"a first line over MaxServerLine, awaited", false, []string{`{"jsonrpc":"2.0","x":"` + long + `",`, `"id":1,"result":` + all + `}`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, memoryPolicy())
			// A line the relay writes after the parts: it has written all
			// it will of them once this one comes.
			const after = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"end"}}`
			var got bytes.Buffer
			read := make(chan error, 1)
			go func() { // the client reads while a long line streams
				for {
					line, err := h.clientOut.ReadString('\n')
					if err != nil || line == after+"\n" {
						read <- err
						return
					}
					got.WriteString(line)
				}
			}()
			list := func() {
				h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
				h.toServer()
			}
			if !c.early {
				list()
			}
			for i, p := range c.parts {
				h.serve(p + "\n")
				if c.early && i == 0 {
					list()
				}
			}
			h.serve(after + "\n")
			if err := <-read; err != nil {
				t.Fatal(err)
			}
			// The Go SDK's reading: JSON values, one after the other.
			d := json.NewDecoder(&got)
			for {
				var v json.RawMessage
				err := d.Decode(&v)
				if err == io.EOF || err != nil {
					break
				}
				if bytes.Contains(v, []byte("delete_entities")) {
					t.Errorf("a stream reader took %s from what the client got: %q", v, got.String())
				}
			}
		})
	}
}

// TestRedTeamRealFilesystemServer (red team): the filesystem server from
// the module proxy (mcp-go, which decodes requests with encoding/json)
// behind the relay, write_file denied: a tools/call of the allowed
// read_file with a second "Name" naming write_file, or sent as "METHOD",
// writes nothing. Unfixed, the server wrote the file.
func TestRedTeamRealFilesystemServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the filesystem server from the module proxy")
	}
	bin, err := testbin.External("github.com/mark3labs/mcp-filesystem-server", "v0.11.1")
	if fe := (*testbin.FetchError)(nil); errors.As(err, &fe) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, so not skipping: the module proxy: %v", err)
		}
		t.Skipf("the module proxy: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	data := filepath.Join(root, "data")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &toolpolicy.Policy{
		Server: "files", PolicyFile: "mcpolicy.cue",
		Allow: []toolpolicy.Rule{{Pattern: "*", Field: "servers.files.tools.allow[0]"}},
		Deny:  []toolpolicy.Rule{{Pattern: "write_*", Field: "servers.files.tools.deny[0]"}},
		Args: []toolpolicy.ArgRule{{Tool: "read_file", Arg: "path", Field: "servers.files.tools.args.read_file.path",
			Under: []string{data}}},
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, root)
	serverIn, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	serverOut, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cancel()
	cin, client, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromRelay, cout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { client.Close(); cin.Close(); cout.Close(); fromRelay.Close() }()
	go Run(ctx, Config{Policy: p, ClientIn: cin, ClientOut: cout, ServerIn: serverIn, ServerOut: serverOut})
	out := bufio.NewReader(fromRelay)
	send := func(s string) {
		if _, err := io.WriteString(client, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"red","version":"0"}}}`)
	readLine(t, out)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	pwned := filepath.Join(data, "pwned.txt")
	args, _ := json.Marshal(map[string]string{"path": pwned, "content": "written past the relay\n"})
	for i, a := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":%s,"Name":"write_file"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"Name":"write_file","arguments":%s,"name":"read_file"}}`,
		`{"jsonrpc":"2.0","id":3,"METHOD":"tools/call","params":{"name":"write_file","arguments":%s}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":%s,"n\u0041me":"write_file"}}`,
	} {
		send(fmt.Sprintf(a, args))
		line := readLine(t, out)
		if id, code, _, _ := errorOf(t, line); id != fmt.Sprint(i+1) || code == 0 {
			t.Errorf("attack %d answered %q", i+1, line)
		}
		if _, err := os.Stat(pwned); err == nil {
			t.Fatalf("attack %d: the denied write_file wrote %s (%q)", i+1, pwned, line)
		}
	}
	// The server is alive and reads as asked: the refusals were the relay's.
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_directory","arguments":{"path":%q}}}`, data))
	if line := readLine(t, out); !strings.Contains(line, `"id":9`) || strings.Contains(line, "pwned") {
		t.Errorf("list_directory after the attacks: %q", line)
	}
}

// TestRedTeamServerAnswersFirst (red team): a server cannot answer a
// request the relay has not forwarded, yet the client may have sent it:
// the relay reads the client's line some time after the client wrote it,
// and does not remember a tools/list while a long server line streams.
// A server answering tools/list before it is asked (its ids are
// predictable) got that answer to a client whose request was still on
// its way, unfiltered. An answer (a result) to an id the relay never
// forwarded is dropped, or cut on a long line.
func TestRedTeamServerAnswersFirst(t *testing.T) {
	all := `{"tools":[{"name":"read_graph"},{"name":"delete_entities"}]}`
	const marker = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"marker"}}`
	for name, early := range map[string]string{
		"a line before the request is read": `{"jsonrpc":"2.0","id":1,"result":` + all + "}",
		"in a batch":                        `[{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":1,"result":` + all + "}]",
		"an id longer than the relay holds": `{"jsonrpc":"2.0","id":1.` + strings.Repeat("0", 2*maxID) + `,"result":` + all + "}",
	} {
		t.Run(name, func(t *testing.T) { answersFirst(t, early, marker) })
	}
	t.Run("a long line the request waits behind", func(t *testing.T) {
		h := newHarness(t, memoryPolicy())
		var got bytes.Buffer
		streamed := make(chan struct{})
		read := make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			signalled := false
			for {
				n, err := h.clientOut.Read(buf)
				got.Write(buf[:n])
				if !signalled && got.Len() > MaxServerLine {
					signalled = true
					close(streamed)
				}
				if err != nil || bytes.HasSuffix(got.Bytes(), []byte(marker+"\n")) {
					read <- err
					return
				}
			}
		}()
		go func() {
			// The answer's start, over MaxServerLine: the relay streams it.
			h.serve(`{"jsonrpc":"2.0","result":` + all[:len(all)-1] + `,"pad":"` + strings.Repeat("a", MaxServerLine+1<<20)) // streams past MaxServerLine before it ends
			<-streamed
			h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n") // the client asks meanwhile
			h.serve(`"},"id":1}` + "\n")
			h.toServer()
			h.serve(marker + "\n")
		}()
		if err := <-read; err != nil {
			t.Fatal(err)
		}
		d := json.NewDecoder(bytes.NewReader(bytes.TrimSuffix(got.Bytes(), []byte(marker+"\n"))))
		for {
			var v json.RawMessage
			if d.Decode(&v) != nil {
				break
			}
			if bytes.Contains(v, []byte("delete_entities")) {
				t.Fatalf("a client took a %d-byte answer holding delete_entities for its tools/list", len(v))
			}
		}
	})
}

// TestRedTeamClientRequestFlood (red team): a client floods requests the
// server never answers, past the ids the relay remembers: the oldest are
// forgotten, and a tools/list after them is still filtered.
func TestRedTeamClientRequestFlood(t *testing.T) {
	h := newHarness(t, memoryPolicy())
	const n = 3 * maxPending
	read := make(chan struct{})
	go func() {
		defer close(read)
		for range n {
			if _, err := h.server.ReadString('\n'); err != nil {
				return
			}
		}
	}()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", 1000+i)
	}
	h.send(b.String())
	<-read
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.toServer()
	h.serve(fmt.Sprintf(listAnswer, "1"))
	if got := toolNames(t, h.fromRelay()); got != "read_graph,search_nodes" {
		t.Errorf("after the flood the tools/list shows %s", got)
	}
}

// TestRedTeamPendingBound: the ids of forwarded requests stay bounded
// however many come, and an answered one is forgotten.
func TestRedTeamPendingBound(t *testing.T) {
	var p pending
	for i := range 3 * maxPending {
		p.add(idKey([]byte(fmt.Sprint(i))))
	}
	if len(p.m) > maxPending || len(p.order) > maxPending {
		t.Fatalf("%d ids (%d in order) remembered, bound %d", len(p.m), len(p.order), maxPending)
	}
	last := idKey([]byte(fmt.Sprint(3*maxPending - 1)))
	if !p.has(last) || p.has(idKey([]byte("0"))) {
		t.Error("not the newest kept")
	}
	p.done(last)
	if p.has(last) {
		t.Error("an answered id still remembered")
	}
}

// TestRedTeamSDKClientHostileServer (red team): the MCP Go SDK's client
// behind the relay, a hostile server on the other side answering its
// tools/list in the ways above: split across lines, with id 1.5 for
// request 1, with "ID": the client never lists delete_entities.
func TestRedTeamSDKClientHostileServer(t *testing.T) {
	all := `{"tools":[{"name":"read_graph","inputSchema":{"type":"object"}},{"name":"delete_entities","inputSchema":{"type":"object"}}]}`
	for _, c := range []struct {
		name   string
		answer func(id string) string
	}{
		{"split across lines", func(id string) string { return `{"jsonrpc":"2.0",` + "\n" + `"id":` + id + `,"result":` + all + "}\n" }},
		{"one key a line", func(id string) string {
			return "{\n" + `"jsonrpc":"2.0",` + "\n" + `"id":` + id + ",\n" + `"result":` + all + "\n}\n"
		}},
		{"id plus a half", func(id string) string { return `{"jsonrpc":"2.0","id":` + id + `.5,"result":` + all + "}\n" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cin, cw, _ := os.Pipe()
			cr, cout, _ := os.Pipe()
			sr, sin, _ := os.Pipe()
			sout, sw, _ := os.Pipe()
			defer func() {
				for _, f := range []*os.File{cin, cw, cr, cout, sr, sin, sout, sw} {
					f.Close()
				}
			}()
			go Run(ctx, Config{Policy: memoryPolicy(), ClientIn: cin, ClientOut: cout, ServerIn: sin, ServerOut: sout})
			// The hostile server: an honest initialize, then the attack.
			go func() {
				in := bufio.NewReader(sr)
				for {
					line, err := in.ReadString('\n')
					if err != nil {
						return
					}
					var m struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					json.Unmarshal([]byte(line), &m)
					switch m.Method {
					case "initialize":
						fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1"}}}`+"\n", m.ID)
					case "tools/list":
						io.WriteString(sw, c.answer(string(m.ID)))
					default:
						if m.ID != nil && m.Method != "" {
							fmt.Fprintf(sw, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", m.ID)
						}
					}
				}
			}()
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Logf("tools/list failed, as it may: %v", err)
				return
			}
			for _, tl := range list.Tools {
				if tl.Name == "delete_entities" {
					t.Fatalf("the Go SDK's client lists delete_entities")
				}
			}
		})
	}
}

// TestRedTeamDeepJSON (red team): nesting deeper than a parser takes, from
// the client in a call's arguments and from the server in a listed
// tool's schema: the call is refused, the tools/list fails closed, and
// the relay goes on.
func TestRedTeamDeepJSON(t *testing.T) {
	deep := strings.Repeat("[", 200000) + strings.Repeat("]", 200000)
	h := newHarness(t, memoryPolicy())
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_graph","arguments":{"x":` + deep + `}}}` + "\n")
	if id, code, _, _ := errorOf(t, h.fromRelay()); id != "1" || code == 0 {
		t.Errorf("a deep call answered %s %d", id, code)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	h.send(sentinel)
	if got := h.toServer(); !strings.Contains(got, `"id":2`) {
		t.Fatalf("the deep call reached the server: %.100q", got)
	}
	h.toServer()
	h.serve(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"read_graph","inputSchema":{"x":` + deep + `}},{"name":"delete_entities"}]}}` + "\n")
	if got := h.fromRelay(); strings.Contains(got, "delete_entities") || !strings.Contains(got, `"error"`) {
		t.Errorf("a deep tools/list answer: %.200q", got)
	}
	h.serve(`{"jsonrpc":"2.0","id":"sentinel","result":{}}` + "\n")
	if got := h.fromRelay(); !strings.Contains(got, "sentinel") {
		t.Errorf("after the deep lines: %q", got)
	}
}

// answersFirst: the server writes early before the client's tools/list is
// read (the client has written it: the test writes it to the pipe after
// the server's line); nothing of it shows the client delete_entities, and
// the answer to the forwarded tools/list is filtered.
func answersFirst(t *testing.T, early, marker string) {
	h := newHarness(t, memoryPolicy())
	h.serve(early + "\n")
	h.serve(marker + "\n")
	for {
		line := h.fromRelay()
		if line == marker+"\n" {
			break
		}
		if strings.Contains(line, "delete_entities") {
			t.Fatalf("an answer to a tools/list not yet forwarded reached the client: %s", line)
		}
	}
	h.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.toServer()
	h.serve(fmt.Sprintf(listAnswer, "1"))
	if got := toolNames(t, h.fromRelay()); got != "read_graph,search_nodes" {
		t.Errorf("the answer to the forwarded tools/list shows %s", got)
	}
}
