package e2e_test

// One spawned entry, spoken to over stdio with the official Go SDK's client
// (package mcpcall starts one process per call, in the test's working
// directory, and cannot time the handshake: it does not fit here).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/syncbuf"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is what the client asks for in initialize: a version
// the clients of today send, answered by initialize (a newer one would
// make the SDK try server/discover first).
const protocolVersion = "2025-06-18"

// session is one entry's process and its MCP session.
type session struct {
	spec     spawnSpec
	cmd      *exec.Cmd
	cs       *mcp.ClientSession
	stdout   syncbuf.Buffer // every byte the process wrote on stdout, as written
	stderr   syncbuf.Buffer // everything it wrote on stderr
	initTook time.Duration  // process start to the initialize result, notifications/initialized sent
	done     chan struct{}  // closed when the process has exited
	exitErr  error          // cmd.Wait's answer, once done
}

// spawn starts spec as a client does (argv[0] as written, resolved on the
// PATH of the process's own environment when it has no slash, stdin and
// stdout as the transport, stderr collected), then runs initialize and
// sends notifications/initialized. On error the process is stopped and
// the error quotes its stderr.
func spawn(ctx context.Context, spec spawnSpec) (*session, error) {
	path, err := lookPath(spec.command, spec.env)
	if err != nil {
		return nil, err
	}
	s := &session{spec: spec, done: make(chan struct{})}
	// os.Pipe rather than StdoutPipe: Wait must not close what the
	// transport still reads.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	s.cmd = &exec.Cmd{
		Path: path, Args: append([]string{spec.command}, spec.args...),
		Env: spec.env, Dir: spec.dir,
		Stdin: inR, Stdout: outW, Stderr: &s.stderr,
		WaitDelay: 5 * time.Second, // a grandchild holding stderr cannot block Wait
	}
	start := time.Now()
	err = s.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", spec.command, err)
	}
	go func() {
		s.exitErr = s.cmd.Wait()
		close(s.done)
	}()
	transport := &mcp.IOTransport{
		Reader: struct {
			io.Reader
			io.Closer
		}{io.TeeReader(outR, &s.stdout), outR},
		Writer: inW,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpolicy-e2e", Version: "v1"}, nil)
	s.cs, err = client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	s.initTook = time.Since(start)
	if err != nil {
		inW.Close()
		outR.Close()
		s.stop(5 * time.Second)
		return s, fmt.Errorf("initialize: %w (exit: %v)\nstderr:\n%s", err, s.exitErr, tail(s.stderr.String(), 20))
	}
	return s, nil
}

// result is one tools/call answer.
type result struct {
	isError bool
	text    string // the text items and embedded text resources, newline-joined
}

// call runs tools/call; a protocol error is an error, a tool's failure is
// isError.
func (s *session) call(ctx context.Context, tool string, args map[string]any) (result, error) {
	r, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return result{}, fmt.Errorf("tools/call %s: %w", tool, err)
	}
	var texts []string
	if r.StructuredContent != nil {
		// A typed tool's answer (the go-sdk's memory example): its text
		// item is a summary, the data is here.
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			texts = append(texts, string(b))
		}
	}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			texts = append(texts, c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				texts = append(texts, c.Resource.Text, string(c.Resource.Blob))
			}
		}
	}
	return result{isError: r.IsError, text: strings.Join(texts, "\n")}, nil
}

// tools runs tools/list and returns the names.
func (s *session) tools(ctx context.Context) ([]string, error) {
	var names []string
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		names = append(names, t.Name)
	}
	return names, nil
}

// close ends the session as a client does (stdin closed: the server sees
// end of input) and waits for the process; after grace it is killed.
// It returns the process's exit error ("" when it exited 0).
func (s *session) close() string {
	if s.cs != nil {
		s.cs.Close()
	}
	return s.stop(15 * time.Second)
}

func (s *session) stop(grace time.Duration) string {
	select {
	case <-s.done:
	case <-time.After(grace):
		s.cmd.Process.Kill() // the process this test started, by its handle
		<-s.done
	}
	if s.exitErr != nil {
		return s.exitErr.Error()
	}
	return ""
}

// lookPath resolves a command without a slash as the clients' spawn does:
// on the PATH of the environment the process gets, not the test's.
func lookPath(command string, env []string) (string, error) {
	if strings.Contains(command, "/") {
		return command, nil // exec.Cmd takes a relative Path from Dir
	}
	for _, d := range filepath.SplitList(envMap(env)["PATH"]) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, command)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on the spawn's PATH %q", command, envMap(env)["PATH"])
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
