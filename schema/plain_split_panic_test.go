package schema

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestValidPlainSplitManyCores: validPlain once split the servers into
// min(GOMAXPROCS, n/parallelFrom) parts of ceil(n/parts) servers; with
// many cores the last parts could start past the end of the list. 6401
// servers on 100 cores: parts 100, share 65, part 99 started at 6435 >
// 6401, and servers[6435:6401] panicked. It now shares batches of
// batchSize between min(GOMAXPROCS, n/parallelFrom) goroutines; the case
// stays, for any split.
//
// The panic is in one of validPlain's goroutines, which no recover in the
// test can catch: the test runs itself in a child process.
func TestValidPlainSplitManyCores(t *testing.T) {
	if testing.Short() {
		t.Skip("a flood, race or corpus test: make test (CI) runs it; -short is the edit loop")
	}
	if os.Getenv("MCPOLICY_SPLIT_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestValidPlainSplitManyCores$")
		cmd.Env = append(os.Environ(), "MCPOLICY_SPLIT_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			msg := string(out)
			if i := strings.Index(msg, "panic: "); i >= 0 {
				msg = msg[i:]
				if j := strings.IndexByte(msg, '\n'); j >= 0 {
					msg = msg[:j]
				}
			}
			t.Fatalf("loading 6401 plain servers with GOMAXPROCS=100: %v: %s", err, msg)
		}
		return
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(100))
	const n = 6401
	var b strings.Builder
	b.WriteString("version: \"v1\"\nservers: {\n")
	for i := range n {
		fmt.Fprintf(&b, "\t\"s%d\": {command: [\"x\"]}\n", i)
	}
	b.WriteString("}\n")
	dir := t.TempDir()
	file := filepath.Join(dir, "mcpolicy.cue")
	if _, err := loadBytes(file, []byte(b.String()), dir, throughPlainCUE); err != nil {
		t.Fatal(err)
	}
}
