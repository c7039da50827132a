package lint_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
)

// TestRunParallelIsSequential: Run lints targets in parallel, sharing its
// walks of folders; the report is what one core gives, every time. The
// targets are every rule's bad and good examples (policies with symlinks,
// nested protected names and secrets to walk, client configs, manifests),
// several of them granting the same folders.
func TestRunParallelIsSequential(t *testing.T) {
	defer lint.SetWalkTimes(time.Minute, time.Minute)() // the bounds are the machine's speed, not the code's
	var ts []*readback.Target
	for _, r := range lint.Registry() {
		for _, e := range []lint.Example{r.Bad, r.Good, r.Bad} {
			// A grant of /tmp itself is walked, and other tests (go test
			// runs packages side by side) write there between two runs.
			if strings.Contains(e.Text, `"/tmp:/tmp"`) {
				continue
			}
			ts = append(ts, targets(t, e)...)
		}
	}
	o := lint.Options{Today: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), MaxExposure: 10}
	run := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		b, err := json.Marshal(lint.Run(ts, o))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := run(1)
	if len(want) < 10000 {
		t.Fatalf("a report of %d bytes for %d targets: the examples did not load", len(want), len(ts))
	}
	for range 5 {
		if got := run(4); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("the report on 4 cores differs from one core's at byte %d:\n%.600s\none core:\n%.600s", i, got[max(0, i-300):], want[max(0, i-300):])
		}
	}
}
