package prove

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/mcpcall"
)

// ToolCall is the controlled comparison's other program: the server itself,
// in the same confinement, asked over MCP to do what the probe did.
type ToolCall struct {
	Tool string
	Args map[string]any
	// Target is the host path the call is about (an Args value), so the
	// server's answer can be set beside the probe's for the same path.
	Target string
}

// ServerRow is what the real server answered, in the same confinement.
type ServerRow struct {
	Tool    string         `json:"tool"`
	Args    map[string]any `json:"args"`
	IsError bool           `json:"isError"`
	Text    string         `json:"text"`
	Errno   string         `json:"errno"`  // read from the text: ENOENT, EACCES... ("" when none)
	Probe   string         `json:"probe"`  // what the probe got for the same target
	Same    bool           `json:"same"`   // same namespace, different program, same result
	Stderr  string         `json:"stderr"` // the server's last lines on stderr (e.g. a canary's startup read)
	Skipped string         `json:"skipped,omitempty"`
}

// errnoOf reads an errno out of an error text, as strerror words it.
func errnoOf(text string) string {
	t := strings.ToLower(text)
	for _, e := range []struct{ words, name string }{
		{"no such file or directory", "ENOENT"}, {"permission denied", "EACCES"}, {"operation not permitted", "EPERM"},
		{"read-only file system", "EROFS"}, {"connection refused", "ECONNREFUSED"}, {"not a directory", "ENOTDIR"},
	} {
		if strings.Contains(t, e.words) {
			return e.name
		}
	}
	return ""
}

// serverArgv is the server's launch under a backend, exactly as the
// artefact says; env is its whole environment.
func serverArgv(backend string, p *compiler.Plan, m compiler.Machine, o Options) (argv, env []string, cleanup func(), err error) {
	cleanup = func() {}
	switch backend {
	case "bwrap":
		// The generated wrapper, as a client spawns it: it passes the
		// plan's variables through --args, never argv.
		sh, err := bwrap.Wrapper(p, "")
		if err != nil {
			return nil, nil, cleanup, err
		}
		dir, err := os.MkdirTemp("", "mcpolicy-prove-")
		if err != nil {
			return nil, nil, cleanup, err
		}
		cleanup = func() { os.RemoveAll(dir) }
		file := filepath.Join(dir, p.Server+".sh")
		if err := os.WriteFile(file, sh, 0o755); err != nil {
			return nil, nil, cleanup, err
		}
		return []string{"/bin/sh", file}, append(os.Environ(), "PROJECT_ROOT="+m.ProjectRoot), cleanup, nil
	case "landlock":
		return []string{o.Self, "exec", "--policy", o.Policy, "--server", p.Server}, os.Environ(), cleanup, nil
	case "docker", "podman":
		if exec.Command(backend, "image", "inspect", p.Image).Run() != nil {
			return nil, nil, cleanup, fmt.Errorf("the server's image %q is not on this machine", p.Image)
		}
		args, err := docker.Args(p, m)
		if err != nil {
			return nil, nil, cleanup, err
		}
		return append([]string{backend}, args...), os.Environ(), cleanup, nil
	}
	return nil, nil, cleanup, fmt.Errorf("unknown backend %q", backend)
}

// callServer starts the real server confined and puts the tool call to it.
func callServer(backend string, p *compiler.Plan, m compiler.Machine, o Options, probeResult string) *ServerRow {
	row := &ServerRow{Tool: o.Call.Tool, Args: o.Call.Args, Probe: probeResult}
	argv, env, cleanup, err := serverArgv(backend, p, m, o)
	defer cleanup()
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := mcpcall.Call(ctx, argv, env, o.Call.Tool, o.Call.Args)
	row.Stderr = lastLines(res.Stderr, 5)
	if err != nil {
		row.Skipped = err.Error()
		return row
	}
	row.IsError, row.Text = res.IsError, res.Text
	row.Errno = errnoOf(res.Text)
	if !res.IsError {
		row.Errno = "ok"
	}
	row.Same = row.Errno == probeResult
	return row
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
