package toolrelay

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSDKClientAndServer: the MCP Go SDK's client and server, each on its
// side of the relay over pipes: the client lists only the allowed tools,
// its call of a denied tool and of an allowed one with a path outside its
// constraint fail with the policy's message, and an allowed call works.
func TestSDKClientAndServer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	server := mcp.NewServer(&mcp.Implementation{Name: "memory", Version: "1"}, nil)
	type pathArg struct {
		Path string `json:"path"`
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	mcp.AddTool(server, &mcp.Tool{Name: "read_graph", Description: "Read the graph"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text("the graph"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "delete_entities", Description: "Delete"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			t.Error("the server ran a denied tool")
			return text("deleted"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "read_file", Description: "Read a file"},
		func(_ context.Context, _ *mcp.CallToolRequest, in pathArg) (*mcp.CallToolResult, any, error) {
			if !strings.HasPrefix(in.Path, "/workspace/") {
				t.Errorf("the server read %q", in.Path)
			}
			return text("contents of " + in.Path), nil, nil
		})

	cin, cw, _ := os.Pipe()
	cr, cout, _ := os.Pipe()
	sr, sin, _ := os.Pipe()
	sout, sw, _ := os.Pipe()
	go server.Run(ctx, &mcp.IOTransport{Reader: sr, Writer: sw})
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{Policy: memoryPolicy(), ClientIn: cin, ClientOut: cout, ServerIn: sin, ServerOut: sout})
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "read_file,read_graph" {
		t.Errorf("the client lists %v", names)
	}
	for _, c := range []struct {
		name string
		args any
		want string
	}{
		{"delete_entities", map[string]any{}, `mcpolicy: tool "delete_entities" is denied by mcpolicy.cue servers.memory.tools.deny[0] ("delete_*")`},
		{"read_file", map[string]any{"path": "/etc/passwd"}, `mcpolicy: argument "path" of tool "read_file" is refused by mcpolicy.cue servers.memory.tools.args.read_file.path: not under ["/workspace"]`},
	} {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("calling %s: %v\nwant %s", c.name, err, c.want)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/workspace/a.txt"}})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "contents of /workspace/a.txt" {
		t.Errorf("an allowed call: %+v %v", res, err)
	}
	cs.Close()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	for _, f := range []*os.File{cin, cw, cr, cout, sr, sin, sout, sw} {
		f.Close()
	}
}
