package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/writereport"
)

// BenchmarkReport is the write report's cost on a 100,000-file project:
// `mcpolicy check` walks each recorded session's read-write grants with
// one statx per entry. The tree (100 folders of 10 of 100 files, hard
// links made
// before the session) is generated outside the timed part; the session
// then plants 3 files, which each iteration must find.
func BenchmarkReport(b *testing.B) {
	root := b.TempDir()
	body := []byte("x")
	// Hard links of a few files: one syscall each keeps the generation within
	// a few seconds; the walk still reads each entry.
	seeds := b.TempDir()
	for i := 0; i < 100; i++ {
		seed := filepath.Join(seeds, fmt.Sprintf("seed%03d.py", i)) // a file system's link count is bounded
		if err := os.WriteFile(seed, body, 0o644); err != nil {
			b.Fatal(err)
		}
		for j := 0; j < 10; j++ {
			d := filepath.Join(root, "src", fmt.Sprintf("m%03d", i), fmt.Sprintf("p%d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
			for k := 0; k < 100; k++ {
				if err := os.Link(seed, filepath.Join(d, fmt.Sprintf("f%03d.py", k))); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	time.Sleep(2 * writereport.Slack) // the tree predates the session
	state := filepath.Join(b.TempDir(), "state")
	if _, err := writereport.Record(state, &writereport.Session{Project: root, Server: "s", Backend: "bwrap", Writable: []string{root}}); err != nil {
		b.Fatal(err)
	}
	for _, p := range []string{"src/m050/p5/__pycache__/f000.cpython-311.pyc", "src/m099/p9/x.pth", "src/m000/p0/run.sh"} {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		os.WriteFile(filepath.Join(root, p), body, 0o755)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rs, err := writereport.Reports(writereport.Options{State: state, Project: root})
		if err != nil {
			b.Fatal(err)
		}
		if len(rs) != 1 || len(rs[0].Pending()) < 3 || len(rs[0].Incomplete) > 0 {
			b.Fatalf("the report missed the planted files: %+v", rs)
		}
	}
	b.ReportMetric(100_000, "files")
}
