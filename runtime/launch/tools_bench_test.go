//go:build linux

package launch_test

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// echoServer answers each request line read from in with a result of the
// same id on out, as a server in a sandbox would on its stdio.
func echoServer(in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	w := bufio.NewWriter(out)
	for sc.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(sc.Bytes(), &m)
		w.WriteString(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"a file's first lines, as a server answers read_file"}]}}` + "\n")
		w.Flush()
	}
}

// benchCalls sends b.N tools/call requests on clientIn and reads each
// answer from clientOut.
func benchCalls(b *testing.B, clientIn io.Writer, clientOut io.Reader) {
	r := bufio.NewReader(clientOut)
	b.ResetTimer()
	for i := range b.N {
		req := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/data/notes.txt"}}}` + "\n"
		if _, err := io.WriteString(clientIn, req); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStdioCall is one tools/call and its answer over the pipes a
// launcher without a tools section gives the sandbox: the client's own.
func BenchmarkStdioCall(b *testing.B) {
	inR, inW, _ := os.Pipe()
	outR, outW, _ := os.Pipe()
	defer inW.Close()
	defer outR.Close()
	go func() {
		echoServer(inR, outW)
		outW.Close()
	}()
	benchCalls(b, inW, outR)
}

// BenchmarkToolRelayCall is the same call through the launcher's tool
// relay (launch.ToolRelay: its pipes to the sandbox, a path argument
// checked against an under constraint): the difference from
// BenchmarkStdioCall is what the relay adds per call.
func BenchmarkToolRelayCall(b *testing.B) {
	p := &toolpolicy.Policy{Server: "s", PolicyFile: "mcpolicy.cue", OnPinChange: "hide",
		Allow: []toolpolicy.Rule{{Pattern: "read_*", Field: "servers.s.tools.allow[0]"}},
		Args:  []toolpolicy.ArgRule{{Tool: "read_file", Arg: "path", Field: "servers.s.tools.args.read_file.path", Under: []string{"/workspace/data"}}}}
	relay, err := launch.NewToolRelay(p, nil)
	if err != nil {
		b.Fatal(err)
	}
	// The sandbox's ends, as its first process would hold them once the
	// relay has closed the launcher's copies.
	in, out := relay.Stdio(nil, nil)
	sin, err := dupFile(in)
	if err != nil {
		b.Fatal(err)
	}
	sout, err := dupFile(out)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		echoServer(sin, sout)
		sout.Close()
	}()
	cinR, cinW, _ := os.Pipe()
	coutR, coutW, _ := os.Pipe()
	relay.Start(cinR, coutW)
	benchCalls(b, cinW, coutR)
	b.StopTimer()
	cinW.Close() // the client's end: the relay closes the server's stdin, the server ends
	relay.Wait()
	coutR.Close()
}

func dupFile(f *os.File) (*os.File, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}
