package toolrelay

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// echoServer answers each tools/call line with a small result of the
// same id until its stdin ends, as a server would.
func echoServer(in *os.File, out *os.File) {
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			out.Close()
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(line, &m)
		if m.Method == "tools/list" {
			out.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"tools":[{"name":"read_file"},{"name":"delete_entities"}]}}` + "\n"))
			continue
		}
		out.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"content":[{"type":"text","text":"hello from the server"}],"isError":false}}` + "\n"))
	}
}

// BenchmarkRelayCall: one tools/call round trip (a constrained path
// argument checked, the answer scanned since a tools/list was answered)
// through the relay, against the same round trip straight through a pipe.
func BenchmarkRelayCall(b *testing.B) {
	for _, path := range []string{"direct", "relay"} {
		b.Run("path="+path, func(b *testing.B) {
			toServerR, toServerW, _ := os.Pipe()
			fromServerR, fromServerW, _ := os.Pipe()
			go echoServer(toServerR, fromServerW)
			clientW, clientOutR := toServerW, fromServerR
			done := make(chan error, 1)
			if path == "relay" {
				cin, cw, _ := os.Pipe()
				cr, cout, _ := os.Pipe()
				go func() {
					done <- Run(context.Background(), Config{Policy: memoryPolicy(), ClientIn: cin, ClientOut: cout, ServerIn: toServerW, ServerOut: fromServerR})
				}()
				clientW, clientOutR = cw, cr
				defer func() { cin.Close(); cr.Close(); cout.Close() }()
			}
			out := bufio.NewReader(clientOutR)
			clientW.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"tools/list"}` + "\n"))
			if _, err := out.ReadBytes('\n'); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				req := `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/workspace/notes/today.md"}}}` + "\n"
				if _, err := clientW.Write([]byte(req)); err != nil {
					b.Fatal(err)
				}
				if _, err := out.ReadBytes('\n'); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			clientW.Close()
			if path == "relay" {
				if err := <-done; err != nil {
					b.Error(err)
				}
			}
			toServerR.Close()
			fromServerR.Close()
		})
	}
}
