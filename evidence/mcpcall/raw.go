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
const (
	MaxToolsBytes = 16 << 20
	MaxToolPages  = 1000
)

// ListToolsRaw starts argv as Call does and reads tools/list page after
// page until there is no nextCursor, returning each tool as the server
// wrote it (the SDK's decoding would lose numbers beyond a float64), in
// the server's order, and its stderr. More than MaxTools tools, more than
// MaxToolsBytes of them or more than MaxToolPages pages is an error that
// says which.
func ListToolsRaw(ctx context.Context, argv []string, env []string) ([]json.RawMessage, string, error) {
	var (
		mu   sync.Mutex
		last json.RawMessage
	)
	onResponse := func(r *jsonrpc.Response) {
		mu.Lock()
		last = r.Result
		mu.Unlock()
	}
	var tools []json.RawMessage
	stderr, err := sessionWith(ctx, argv, env, onResponse, func(cs *mcp.ClientSession) error {
		cursor, size := "", 0
		for page := 1; ; page++ {
			if page > MaxToolPages {
				return fmt.Errorf("tools/list: more than %d pages: refusing to read further", MaxToolPages)
			}
			mu.Lock()
			last = nil
			mu.Unlock()
			// The client makes one call at a time: the response read
			// last, once it returns, is this page's.
			if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor}); err != nil {
				return fmt.Errorf("tools/list: %w", err)
			}
			mu.Lock()
			raw := last
			mu.Unlock()
			var res struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if raw == nil {
				return fmt.Errorf("tools/list: no response read")
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
