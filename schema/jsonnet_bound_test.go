package schema

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestJsonnetBounded: a Jsonnet policy that does not end, or grows without
// bound, is stopped in under 2 s with an error naming the file, and the
// memory it took is bounded. Each runs in a child process: go-jsonnet
// cannot be interrupted, and what it leaves running ends with the process.
func TestJsonnetBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("each bomb runs for a second")
	}
	// A bomb that allocates as it runs stops at the memory limit or at
	// the time limit, whichever the machine reaches first (the doubling
	// string and the comprehension reach either, from run to run).
	const late, either = "stopped after 1s", "evaluation stopped "
	bombs := map[string][2]string{ // source, what the error says
		"deep nesting":        {"{version: \"v1\",\n servers: " + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, "mcpolicy.jsonnet:2:110: Jsonnet error: brackets nested more than 100 deep"},
		"exponential calls":   {`local f(n) = if n == 0 then "x" else f(n-1) + f(n-1); {version: "v1", x: f(40)}`, late},
		"doubling string":     {`local d(s, n) = if n == 0 then s else d(s + s, n - 1); {version: "v1", x: d("x", 40)}`, either},
		"large comprehension": {`{version: "v1", x: [i*j for i in std.range(1, 100000) for j in std.range(1, 100000)]}`, either},
		"large string":        {`{version: "v1", x: std.repeat("xxxxxxxxxxxxxxxx", 1100000)}`, either},
	}
	for name, bomb := range bombs {
		src, want := bomb[0], bomb[1]
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "mcpolicy.jsonnet")
			if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestJsonnetBombChild$")
			cmd.Env = append(os.Environ(), "MCPOLICY_BOMB="+file)
			start := time.Now()
			timer := time.AfterFunc(10*time.Second, func() { cmd.Process.Kill() })
			out, err := cmd.Output()
			timer.Stop()
			if err != nil {
				t.Fatalf("child after %v: %v\n%s", time.Since(start), err, out)
			}
			var r bombResult
			if err := json.Unmarshal(out[:strings.IndexByte(string(out), '\n')], &r); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if r.Took > 2*time.Second {
				t.Errorf("took %v", r.Took)
			}
			if !strings.HasPrefix(r.Err, file+":") || !strings.Contains(r.Err, "Jsonnet error: ") || !strings.Contains(r.Err, want) {
				t.Errorf("want a Jsonnet error naming %s and saying %q, got %q", file, want, r.Err)
			}
			if r.SysGrowth > 512<<20 {
				t.Errorf("memory from the system grew by %d MiB", r.SysGrowth>>20)
			}
			t.Logf("%v, %d MiB: %s", r.Took, r.SysGrowth>>20, strings.SplitN(r.Err, "\n", 2)[0])
		})
	}
}

// TestJsonnetOutputBounded: the JSON a policy renders to is no larger
// than a policy file may be.
func TestJsonnetOutputBounded(t *testing.T) {
	defer func(max int) { jsonnetMaxOutput = max }(jsonnetMaxOutput)
	jsonnetMaxOutput = 1 << 10
	file := filepath.Join(t.TempDir(), "mcpolicy.jsonnet")
	src := `local d(s, n) = if n == 0 then s else d(s + s, n - 1); {version: "v1", x: d("x", 11)}`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(file, filepath.Dir(file))
	if want := file + ": Jsonnet error: the policy renders to 2083 bytes of JSON, more than the 1024 bytes a policy may"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want %q, got %v", want, err)
	}
}

type bombResult struct {
	Err       string
	Took      time.Duration
	SysGrowth uint64
}

// TestJsonnetBombChild loads the policy MCPOLICY_BOMB names and prints
// what TestJsonnetBounded asserts.
func TestJsonnetBombChild(t *testing.T) {
	file := os.Getenv("MCPOLICY_BOMB")
	if file == "" {
		t.Skip("run by TestJsonnetBounded")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := Load(file, filepath.Dir(file))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	r := bombResult{Took: took, SysGrowth: after.Sys - before.Sys}
	if err != nil {
		r.Err = err.Error()
	}
	b, _ := json.Marshal(r)
	os.Stdout.Write(append(b, '\n'))
	os.Exit(0) // what go-jsonnet left running ends here
}
