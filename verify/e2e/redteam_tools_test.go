package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRedTeamToolSurface (red team of issue #40): a hostile client speaks
// raw JSON-RPC to the files server (mcp-filesystem-server, which decodes
// requests with Go's case-insensitive encoding/json) through every path a
// person starts it by, on every backend: a tools/call of the allowed
// read_file carrying a second "Name" that names the denied write_file,
// or the call sent as "METHOD", is refused by the relay, and the file is
// not written on the host. Before the relay folded keys, the server wrote
// it.
func TestRedTeamToolSurface(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the end-to-end test runs the real backends")
	}
	mcpolicy, server, memory, gopls, rugpull := tools(t), filesystemServer(t), memoryServer.path(t), goplsServer.path(t), rugpullServer(t)
	w := toolsWorld(t, mcpolicy, server, memory, gopls, rugpull)
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			requireBackend(t, backend)
			if backend == "docker" || backend == "podman" {
				importEmptyImage(t, backend, w.image)
			}
			for _, lp := range w.paths(t, backend) {
				t.Run(lp.name, func(t *testing.T) {
					w.smuggle(t, backend, lp.spawn(t, "files"))
				})
			}
		})
	}
}

// smuggle sends the attacks raw and checks each is refused and nothing
// is written.
func (w *world) smuggle(t *testing.T, backend string, spec spawnSpec) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	path, err := lookPath(spec.command, spec.env)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, path, spec.args...)
	cmd.Args[0] = spec.command
	cmd.Env, cmd.Dir = spec.env, spec.dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	lines := make(chan string)
	go func() {
		defer close(lines)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the server's stdout ended; stderr:\n%s", tail(stderr.String(), 20))
			}
			return l
		case <-ctx.Done():
			t.Fatalf("no answer; stderr:\n%s", tail(stderr.String(), 20))
		}
		return ""
	}
	send := func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"red","version":"0"}}}`)
	next()
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	host := filepath.Join(w.root, "data", "pwned-"+backend+".txt")
	os.Remove(host)
	args, _ := json.Marshal(map[string]string{"path": w.view(backend) + "/data/pwned-" + backend + ".txt", "content": "written past the relay\n"})
	for i, a := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":%s,"Name":"write_file"}}`,
		`{"jsonrpc":"2.0","id":2,"METHOD":"tools/call","params":{"name":"write_file","arguments":%s}}`,
	} {
		send(fmt.Sprintf(a, args))
		line := next()
		var r struct {
			ID    json.RawMessage     `json:"id"`
			Error *struct{ Code int } `json:"error"`
		}
		if json.Unmarshal([]byte(line), &r) != nil || r.Error == nil || string(r.ID) != fmt.Sprint(i+1) {
			t.Errorf("attack %d answered %.300q", i+1, line)
		}
		if _, err := os.Stat(host); err == nil {
			os.Remove(host)
			t.Fatalf("attack %d: the denied write_file wrote %s", i+1, host)
		}
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("the launch ended with %v after its client's EOF; stderr:\n%s", err, tail(stderr.String(), 20))
	}
}
