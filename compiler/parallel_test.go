package compiler

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestCompileParallelIsSequential: servers compile in parallel, and the
// plans and the errors (their order included) are what one core gives,
// every time: bad servers spread through a long policy (a reserved
// workdir, a source outside the project, an invalid name; protected names
// found in the rw mounts). Names declared twice, in two files, are the
// goldens' (invalid_duplicate_server_dir). Servers sharing a read-write
// folder accept rw-holds-other-server (crossserver_test.go).
func TestCompileParallelIsSequential(t *testing.T) {
	var src strings.Builder
	src.WriteString("version: \"v1\"\nservers: {\n")
	for i := range 300 {
		source, extra := fmt.Sprintf("d%d", i%3), ""
		switch i % 7 {
		case 3:
			extra = `, workdir: "/proc/x"`
		case 5:
			source = "../out"
		}
		fmt.Fprintf(&src, "\t\"s%03d\": {command: [\"x\"], mounts: [{source: %q, target: \"/d\", mode: \"rw\"}], accept: [\"rw-holds-other-server\"]%s}\n", i, source, extra)
	}
	src.WriteString("\t\"S\": {command: [\"x\"]}\n}\n")
	files := []string{"d0/", "d1/.git/", "d2/.vscode/", "d2/.env"}

	run := func(procs int) string {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		plans, root, err := compileSrc(t, src.String(), files...)
		var out strings.Builder
		fmt.Fprintf(&out, "%v\n", err)
		for _, p := range plans {
			out.Write(p.JSON())
		}
		return strings.ReplaceAll(out.String(), root, "ROOT")
	}
	want := run(1)
	if !strings.Contains(want, "/proc") || !strings.Contains(want, "escapes the project root") {
		t.Fatalf("the policy's errors are not the ones meant:\n%.2000s", want)
	}
	for range 5 {
		if got := run(4); got != want {
			t.Fatalf("compiled on 4 cores:\n%.3000s\non one:\n%.3000s", got, want)
		}
	}

	// Valid servers only: the plans, in order.
	src.Reset()
	src.WriteString("version: \"v1\"\nservers: {\n")
	for i := range 300 {
		fmt.Fprintf(&src, "\t\"s%03d\": {command: [\"x\"], mounts: [{source: \"d%d\", target: \"/d\", mode: \"rw\"}], accept: [\"rw-holds-other-server\"]}\n", i, i%3)
	}
	src.WriteString("}\n")
	want = run(1)
	if strings.Count(want, `"server": "s`) != 300 {
		t.Fatalf("want 300 plans:\n%.2000s", want)
	}
	for range 5 {
		if got := run(4); got != want {
			t.Fatalf("compiled on 4 cores, the plans differ from one core's")
		}
	}
}
