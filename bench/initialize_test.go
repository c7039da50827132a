package bench

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/internal/testbin"
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
	return dir, nil
})

// BenchmarkInitialize is spawn-to-initialize of a real MCP server: the
// process started as Claude Desktop starts its entry, the initialize
// request written, its answer read, stdin closed, the exit waited for.
// backend=unconfined runs the server's own command; each other backend
// runs the entry `mcpolicy client claude-desktop --backend B` writes (the
// launcher, the digest check, the sandbox).
//
//	go test ./bench -run '^$' -bench Initialize -count 10 > init.txt
//	benchstat -col /backend init.txt
func BenchmarkInitialize(b *testing.B) {
	dir, err := initFixture()
	if err != nil {
		var fetch *testbin.FetchError
		if errors.As(err, &fetch) && os.Getenv("CI") != "true" {
			b.Skip(err)
		}
		b.Fatal(err)
	}
	b.Run("backend=unconfined", func(b *testing.B) {
		loopInitialize(b, filepath.Join(dir, "bin", "memory"))
	})
	for _, backend := range []string{"bwrap", "landlock", "docker", "podman"} {
		b.Run("backend="+backend, func(b *testing.B) {
			switch backend {
			case "bwrap":
				lookPath(b, "bwrap")
			case "docker", "podman":
				lookPath(b, backend)
				if _, err := engineImage(backend); err != nil {
					b.Skip(err)
				}
			}
			command, args := clientEntry(b, dir, backend)
			loopInitialize(b, command, args...)
		})
	}
}

// clientEntry writes Claude Desktop's entry for backend and returns it.
func clientEntry(b *testing.B, dir, backend string) (string, []string) {
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
	return e.Command, e.Args
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
