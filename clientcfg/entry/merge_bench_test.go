package entry

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
)

// BenchmarkMergeLargeFile: one entry merged into a ~100 KB ~/.claude.json
// (300 projects, 50 servers), read and checked as Claude Code reads it.
func BenchmarkMergeLargeFile(b *testing.B) {
	projects := map[string]any{}
	for i := 0; i < 300; i++ {
		var h []string
		for j := 0; j < 20; j++ {
			h = append(h, fmt.Sprintf("h%d", j))
		}
		projects[fmt.Sprintf("/w/%d", i)] = map[string]any{"history": h}
	}
	servers := map[string]any{}
	for i := 0; i < 50; i++ {
		servers[fmt.Sprintf("other%d", i)] = map[string]any{"command": "uvx", "args": []string{"x"}}
	}
	src, _ := json.MarshalIndent(map[string]any{"theme": "dark", "projects": projects, "mcpServers": servers}, "", "  ")
	c, _ := clientcfg.LookupClient("claude-code")
	b.SetBytes(int64(len(src)))
	for i := 0; i < b.N; i++ {
		if _, err := Merge("cfg", src, c, "alpha", managedLaunch("alpha"), false); err != nil {
			b.Fatal(err)
		}
	}
}
