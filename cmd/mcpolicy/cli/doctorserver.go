package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/clientcfg/entry"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/diagnose"
	"github.com/mcpolicy/mcpolicy/evidence/mcpcall"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/project"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// serverTry is one start of a server by doctor --server.
type serverTry struct {
	Backend  string             `json:"backend"`
	Entry    []string           `json:"entry"`
	OK       bool               `json:"ok"`
	Tools    int                `json:"tools,omitempty"`
	Millis   int64              `json:"spawnToToolsMs,omitempty"` // spawn to the answer of tools/list
	Error    string             `json:"error,omitempty"`
	Findings []diagnose.Finding `json:"findings,omitempty"`
	Record   *launchlog.Record  `json:"record,omitempty"`
	Stderr   []string           `json:"stderr,omitempty"`
}

// doctorServerRun starts the server through its real entry on each of
// its backends (or --backend; or the entry --client's file holds), speaks
// MCP to it (initialize, tools/list) and explains a failure in grant
// terms from its launch record and stderr.
func doctorServerRun(ctx context.Context, opts *doctorOptions) error {
	if err := checkBackend("doctor", opts.Backend, backendsOf("doctor")); err != nil {
		return err
	}
	proj, plan, plans, err := compileServerOf(opts.Policy, opts.Server)
	if err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	m := compiler.Machine{ProjectRoot: proj.Root, Home: home}
	dc := &diagnose.Context{Plan: plan, Plans: plans, Machine: m, Unwritable: map[string]string{}}
	for _, u := range noteUnwritable(opts.Err, []*compiler.Plan{plan}, proj.Root) {
		dc.Unwritable[u.Source] = u.String()
	}
	backends := plan.Backends
	if opts.Backend != "" {
		backends = []string{opts.Backend}
	}
	var tries []serverTry
	failed := false
	for _, b := range backends {
		argv, env, err := opts.serverEntry(proj, plan, b, home)
		t := serverTry{Backend: b, Entry: argv}
		if err != nil {
			t.Error = err.Error()
			t.Findings = []diagnose.Finding{{Rule: "no-entry", What: "no entry could be made for this backend: " + err.Error(), Fix: "run `mcpolicy build`, or name the backend the entry is for (--backend)"}}
		} else {
			dc.Backend = b
			t.run(ctx, opts.Timeout, argv, env, proj.Root, plan.Server, dc)
		}
		failed = failed || !t.OK
		tries = append(tries, t)
		if opts.Client != "" {
			break // the file holds one entry
		}
	}
	if opts.Format == "json" {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(tries); err != nil {
			return err
		}
	} else {
		writeTries(opts.Out, plan.Server, tries)
	}
	if failed {
		return &errSilent{code: ExitFindings}
	}
	return nil
}

// run starts argv, lists its tools within timeout, and on a failure reads
// the launch record the start left and explains it.
func (t *serverTry) run(ctx context.Context, timeout time.Duration, argv, env []string, root, server string, dc *diagnose.Context) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	tools, stderr, err := mcpcall.ListTools(ctx, argv, env)
	if err == nil {
		t.OK, t.Tools, t.Millis = true, len(tools), time.Since(start).Milliseconds()
		return
	}
	t.Error, _, _ = strings.Cut(err.Error(), "\nstderr:") // the stderr is shown below, line by line
	state := launchlog.StateDir(os.Getenv)
	if state != "" {
		rec, _ := launchlog.Last(launchlog.Path(state, root, server), dc.Backend, start.Add(-time.Second))
		t.Record = rec
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) > launchlog.TailLines {
		lines = lines[len(lines)-launchlog.TailLines:]
	}
	if stderr == "" {
		lines = nil
	}
	t.Stderr = lines
	t.Findings = diagnose.Explain(dc, t.Record, lines)
}

// writeTries prints one block per backend: ok with the tool count and
// the time, or the failure, its explanation and fix, and the last stderr
// lines (the server's words, escaped).
func writeTries(w io.Writer, server string, tries []serverTry) {
	for _, t := range tries {
		if t.OK {
			fmt.Fprintf(w, "%s on %s: ok, %d tools, %d ms from spawn to tools/list\n", server, t.Backend, t.Tools, t.Millis)
			continue
		}
		fmt.Fprintf(w, "%s on %s: FAILED: %s\n", server, t.Backend, printable.String(t.Error))
		for _, f := range t.Findings {
			fmt.Fprintf(w, "  why: %s\n  fix: %s\n", f.What, f.Fix)
			if f.Line != "" {
				fmt.Fprintf(w, "  from: %s\n", f.Line)
			}
		}
		lines := t.Stderr
		if t.Record != nil && len(t.Record.Stderr) > 0 {
			lines = t.Record.Stderr
		}
		if n := len(lines); n > 10 {
			lines = lines[n-10:]
		}
		if len(lines) > 0 {
			fmt.Fprintf(w, "  last stderr lines:\n")
			for _, l := range lines {
				fmt.Fprintf(w, "    | %s\n", printable.String(l))
			}
		}
	}
}

// serverEntry is the command and environment the server's entry starts:
// the one --client's file holds for it, else the one `mcpolicy client`
// writes for backend (claude-code's: the client passes its environment).
func (opts *doctorOptions) serverEntry(proj *project.Project, plan *compiler.Plan, backend, home string) ([]string, []string, error) {
	if opts.Client != "" {
		return clientcfg.SpawnEntry(opts.Client, plan.Server, os.Environ())
	}
	c, err := clientcfg.LookupClient("claude-code")
	if err != nil {
		return nil, nil, err
	}
	self, _ := os.Executable()
	l, err := entry.LaunchFor(c, plan, backend, proj.Root, home, filepath.Join(proj.Root, project.DefaultOut), self, "", false)
	if err != nil {
		return nil, nil, err
	}
	env := os.Environ()
	for k, v := range l.Env {
		env = append(env, k+"="+v)
	}
	return append([]string{l.Command}, l.Args...), env, nil
}
