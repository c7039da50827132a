package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// WriteServers writes dir/mcpolicy.cue, a policy of n servers, each with a
// read-only and a read-write mount, scratch, two env names and limits (a
// plausible, not minimal, server), and creates the mounts' sources.
func WriteServers(dir string, n int) error {
	var b strings.Builder
	b.WriteString("version: \"v1\"\nservers: {\n")
	for i := range n {
		fmt.Fprintf(&b, `	"server-%d": {
		image: "example/server:%d"
		command: ["node", "/app/index.js", "--stdio"]
		mounts: [{source: "src", target: "/workspace/src"}, {source: "out/%d", target: "/out", mode: "rw"}]
		scratch: size: "64m"
		env: ["GITHUB_TOKEN", "LOG_LEVEL"]
		limits: {memory: "512m", pids: 128, cpus: 1}
	}
`, i, i, i)
		if err := os.MkdirAll(filepath.Join(dir, "out", fmt.Sprint(i)), 0o755); err != nil {
			return err
		}
	}
	b.WriteString("}\n")
	if err := os.MkdirAll(filepath.Join(dir, "src"), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(b.String()), 0o644)
}
