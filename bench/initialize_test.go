package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/project"
)

// The MCP server BenchmarkInitialize starts: the go-sdk's memory example
// (static, keeping its graph in memory), from the module proxy.
const (
	initModule  = "github.com/modelcontextprotocol/go-sdk"
	initVersion = "v1.8.0"
	initPackage = initModule + "/examples/server/memory"
)

// initPolicy runs the server from the policy's folder (bin/memory), on
// every backend; the image is the spawn benchmark's (%q): the binary
// reaches the container through the mount.
const initPolicy = `version: "v1"
servers: memory: {
	image:   %q
	command: ["/data/bin/memory"]
	runtime: "static"
	backends: ["bwrap", "landlock", "docker"]
	mounts: [{source: ".", target: "/data"}]
}
`

// initFixture is the policy folder, built, with the server in bin/.
var initFixture = sync.OnceValues(func() (string, error) {
	server, err := testbin.ExternalPackage(initModule, initVersion, initPackage)
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "mcpolicy-bench-init-")
	if err != nil {
		return "", err
	}
	atExit(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", err
	}
	if err := testbin.CopyFile(server, filepath.Join(dir, "bin", "memory")); err != nil {
		return "", err
	}
	image := fmt.Sprintf("localhost/mcpolicy-bench:spawn-%d", os.Getpid()) // engineImage's name
	if err := os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(fmt.Sprintf(initPolicy, image)), 0o644); err != nil {
		return "", err
	}
	bin, err := mcpolicyBinary()
	if err != nil {
		return "", err
	}
	// Client entries run the launcher, which mcpolicy client finds beside
	// itself: testbin builds both into one folder.
	if _, err := launcherBinary(); err != nil {
		return "", err
	}
	if out, err := exec.Command(bin, "build", dir).CombinedOutput(); err != nil {
		return "", fmt.Errorf("mcpolicy build: %v\n%s", err, out)
	}
	// egress/: the same server with an egress allowlist, for mcpolicy run.
	egress := filepath.Join(dir, "egress")
	if err := testbin.CopyFile(server, filepath.Join(egress, "bin", "memory")); err != nil {
		return "", err
	}
	policy := strings.Replace(fmt.Sprintf(initPolicy, image), `runtime: "static"`, `runtime: "static"
	network: allow: ["api.example.com:443"]`, 1)
	if err := os.WriteFile(filepath.Join(egress, "mcpolicy.cue"), []byte(policy), 0o644); err != nil {
		return "", err
	}
	return dir, nil
})

// BenchmarkInitialize is spawn-to-initialize of a real MCP server: the
// process started as Claude Desktop starts its entry, the initialize
// request written, its answer read, stdin closed, the exit waited for.
// Each launch=X is one way to start the same server, side by side:
//
//	bare                the server's own command, unconfined
//	bwrap               bwrap by hand: the flags the bwrap backend emits
//	bwrap-entry         the entry `mcpolicy client claude-desktop --backend bwrap` writes
//	landlock-entry      the same for the Landlock launcher
//	exec                mcpolicy exec (compiles the policy, then Landlock)
//	run-egress-bwrap    mcpolicy run of the policy with an egress allowlist (proxy, forwarder, bwrap)
//	docker, podman      ENGINE run by hand with the emitted arguments
//	docker-entry, podman-entry   their client entries (the launcher's checks, then ENGINE run)
//	firejail            firejail, where installed, with the nearest confinement it has
//
// Each also reports resident-kB: the resident memory of every process the
// launch keeps beside the running server (launchers, bwrap, the engine's
// client, the forwarder; the server itself apart), measured once while it
// idles after its initialize answer.
//
//	go test ./bench -run '^$' -bench Initialize -count 10 > init.txt
//	benchstat -col /launch init.txt
func BenchmarkInitialize(b *testing.B) {
	dir, err := initFixture()
	if err != nil {
		var fetch *testbin.FetchError
		if errors.As(err, &fetch) && os.Getenv("CI") != "true" {
			b.Skip(err)
		}
		b.Fatal(err)
	}
	server := filepath.Join(dir, "bin", "memory")
	plan := func(b *testing.B) (*compiler.Plan, compiler.Machine) {
		proj, err := project.Discover(dir)
		if err != nil {
			b.Fatal(err)
		}
		home, _ := os.UserHomeDir()
		plans, err := proj.Compile(home)
		if err != nil {
			b.Fatal(err)
		}
		return plans[0], compiler.Machine{ProjectRoot: proj.Root, Home: home}
	}
	launches := []struct {
		name string
		argv func(b *testing.B) []string
	}{
		{"bare", func(b *testing.B) []string { return []string{server} }},
		{"bwrap", func(b *testing.B) []string {
			path := lookPath(b, "bwrap")
			p, m := plan(b)
			args, err := bwrap.Args(p, m, bwrap.DetectLayout(), 0)
			if err != nil {
				b.Fatal(err)
			}
			return append([]string{path}, args...)
		}},
		{"bwrap-entry", func(b *testing.B) []string { lookPath(b, "bwrap"); return clientEntry(b, dir, "bwrap") }},
		{"landlock-entry", func(b *testing.B) []string { return clientEntry(b, dir, "landlock") }},
		{"exec", func(b *testing.B) []string {
			return []string{binary(b), "exec", "--policy", filepath.Join(dir, "mcpolicy.cue"), "--server", "memory"}
		}},
		{"run-egress-bwrap", func(b *testing.B) []string {
			lookPath(b, "bwrap")
			return []string{binary(b), "run", "--policy", filepath.Join(dir, "egress", "mcpolicy.cue"), "--server", "memory", "--backend", "bwrap", "--log", os.DevNull}
		}},
	}
	for _, engine := range []string{"docker", "podman"} {
		launches = append(launches, struct {
			name string
			argv func(b *testing.B) []string
		}{engine, func(b *testing.B) []string {
			path := lookPath(b, engine)
			if _, err := engineImage(engine); err != nil {
				b.Skip(err)
			}
			p, m := plan(b)
			args, err := docker.Args(p, m)
			if err != nil {
				b.Fatal(err)
			}
			return append([]string{path}, args...)
		}}, struct {
			name string
			argv func(b *testing.B) []string
		}{engine + "-entry", func(b *testing.B) []string {
			lookPath(b, engine)
			if _, err := engineImage(engine); err != nil {
				b.Skip(err)
			}
			return clientEntry(b, dir, engine)
		}})
	}
	launches = append(launches, struct {
		name string
		argv func(b *testing.B) []string
	}{"firejail", func(b *testing.B) []string {
		// No network, no new privileges, no capability, its default
		// seccomp filter, an empty home and /dev, the server's folder
		// read-only: the nearest firejail's options come to the bwrap
		// flags without a profile (/tmp stays: the server lies there).
		return []string{lookPath(b, "firejail"), "--quiet", "--noprofile", "--net=none", "--nonewprivs", "--caps.drop=all", "--seccomp", "--private", "--private-dev", "--read-only=" + dir, server}
	}})
	for _, l := range launches {
		b.Run("launch="+l.name, func(b *testing.B) {
			argv := l.argv(b)
			kb, err := residentBeside(argv[0], argv[1:]...)
			if err != nil {
				b.Fatalf("%s: %v", strings.Join(argv, " "), err)
			}
			loopInitialize(b, argv[0], argv[1:]...)
			b.ReportMetric(float64(kb), "resident-kB")
		})
	}
}

// clientEntry writes Claude Desktop's entry for backend and returns its
// argv.
func clientEntry(b *testing.B, dir, backend string) []string {
	b.Helper()
	file := filepath.Join(dir, "claude-"+backend+".json")
	if out, err := exec.Command(binary(b), "client", "claude-desktop", "--backend", backend, "--file", file, "--write", "-p", dir).CombinedOutput(); err != nil {
		b.Fatalf("mcpolicy client --backend %s: %v\n%s", backend, err, out)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		b.Fatal(err)
	}
	e := cfg.MCPServers["memory"]
	return append([]string{e.Command}, e.Args...)
}

// loopInitialize starts command once per iteration and times it up to the
// initialize result and the exit after stdin closes.
func loopInitialize(b *testing.B, command string, args ...string) {
	b.Helper()
	for b.Loop() {
		if err := initializeOnce(command, args...); err != nil {
			b.Fatalf("%s %s: %v", command, strings.Join(args, " "), err)
		}
	}
}

const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}` + "\n"

func initializeOnce(command string, args ...string) error {
	return initialize(nil, command, args...)
}

// residentBeside starts command, waits for its initialize answer and sums
// the resident memory (VmRSS) of the processes it started, the server
// (named memory) apart: what a launch keeps beside a running server.
func residentBeside(command string, args ...string) (int, error) {
	kb := 0
	err := initialize(func(pid int) {
		for _, p := range tree(pid) {
			if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", p)); strings.TrimSpace(string(comm)) == "memory" {
				continue
			}
			status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
			for _, line := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
					kb += n
				}
			}
		}
	}, command, args...)
	return kb, err
}

// tree is pid and its descendants.
func tree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		rest := string(stat[bytes.LastIndexByte(stat, ')')+1:])
		var state string
		var ppid int
		if _, err := fmt.Sscan(rest, &state, &ppid); err == nil {
			children[ppid] = append(children[ppid], p)
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// initialize runs command to its initialize answer, calls answered (if
// any) with its pid while the server idles, then closes stdin and waits.
func initialize(answered func(pid int), command string, args ...string) error {
	cmd := exec.Command(command, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		if _, err := io.WriteString(stdin, initializeRequest); err != nil {
			done <- err
			return
		}
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && !strings.Contains(line, `"result"`) {
			err = fmt.Errorf("initialize answered %s", line)
		}
		done <- err
	}()
	var answer error
	select {
	case answer = <-done:
	case <-time.After(2 * time.Minute):
		answer = fmt.Errorf("no initialize answer in 2m")
	}
	if answer == nil && answered != nil {
		answered(cmd.Process.Pid)
	}
	stdin.Close()
	if answer != nil {
		cmd.Process.Kill() // the process this benchmark started
	}
	wait := cmd.Wait()
	if answer != nil {
		return fmt.Errorf("%v\nstderr:\n%s", answer, stderr.String())
	}
	if wait != nil {
		return fmt.Errorf("exit after stdin closed: %v\nstderr:\n%s", wait, stderr.String())
	}
	return nil
}
