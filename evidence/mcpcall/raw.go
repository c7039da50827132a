package mcpcall

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of ListToolsRaw: what a server lists is kept whole, so its size
// is bounded, and so are its pages (a server handing out a new cursor
// with no tools on each page would otherwise be read until the deadline).
// A page is one line, which the SDK bounds (mcp.DefaultMaxLineLength).
const (
	MaxToolsBytes = 16 << 20
	MaxToolPages  = 1000
)

// ListToolsRaw starts argv as Call does and reads tools/list page after
// page until there is no nextCursor, returning each tool as the server
// wrote it, in the server's order, and its stderr. More than MaxTools
// tools, more than MaxToolsBytes of them or more than MaxToolPages pages
// is an error that says which.
func ListToolsRaw(ctx context.Context, argv []string, env []string) ([]json.RawMessage, string, error) {
	lists := &rawLists{}
	var tools []json.RawMessage
	stderr, err := sessionWith(ctx, argv, env, lists, func(cs *mcp.ClientSession) error {
		cursor, size := "", 0
		for page := 1; ; page++ {
			if page > MaxToolPages {
				return fmt.Errorf("tools/list: more than %d pages: refusing to read further", MaxToolPages)
			}
			if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor}); err != nil {
				return fmt.Errorf("tools/list: %w", err)
			}
			raw := lists.take()
			if raw == nil {
				return fmt.Errorf("tools/list: page %d: no result read", page)
			}
			var res struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("tools/list: page %d: %w", page, err)
			}
			for _, t := range res.Tools {
				if size += len(t); size > MaxToolsBytes {
					return fmt.Errorf("tools/list: its tools take more than %d MiB: refusing to read further", MaxToolsBytes>>20)
				}
				if len(tools) >= MaxTools {
					return fmt.Errorf("tools/list: more than %d tools: refusing to read further", MaxTools)
				}
				tools = append(tools, t)
			}
			if res.NextCursor == "" {
				return nil
			}
			cursor = res.NextCursor
		}
	})
	return tools, stderr, err
}

// rawLists keeps the result of each tools/list call the client makes as
// the server wrote it, and hands the SDK an empty list in its place: the
// SDK's decoding loses what a pin must keep (numbers beyond a float64)
// and fails on some of it (-1e400), and ListToolsRaw reads the raw
// result, not the SDK's.
type rawLists struct {
	mu   sync.Mutex
	ids  map[jsonrpc.ID]bool // tools/list calls sent, not answered yet
	last json.RawMessage
}

func (l *rawLists) sent(id jsonrpc.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ids == nil {
		l.ids = map[jsonrpc.ID]bool{}
	}
	l.ids[id] = true
}

// read keeps r's result when r answers a tools/list call.
func (l *rawLists) read(r *jsonrpc.Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ids[r.ID] {
		return
	}
	delete(l.ids, r.ID)
	if r.Error == nil {
		l.last, r.Result = r.Result, json.RawMessage(`{"tools":[]}`)
	}
}

// take returns the result read last, and forgets it.
func (l *rawLists) take() json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	raw := l.last
	l.last = nil
	return raw
}
