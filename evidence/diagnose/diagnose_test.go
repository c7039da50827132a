package diagnose

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

func plan() *compiler.Plan {
	return &compiler.Plan{Server: "s", User: compiler.User{UID: 1000, GID: 1000},
		Mounts: []compiler.Mount{
			{Source: compiler.HostPath{Base: compiler.Absolute, Rel: "/srv/data"}, Target: "/data", Mode: compiler.ReadOnly},
			{Source: compiler.HostPath{Base: compiler.Absolute, Rel: "/srv/out"}, Target: "/out", Mode: compiler.ReadWrite},
		}}
}

// Each rule, on the lines servers write, explains with the fix it names.
func TestRules(t *testing.T) {
	lookPath := func(name string) (string, error) {
		if name == "go" {
			return "/usr/local/go/bin/go", nil
		}
		return "", errors.New("not found")
	}
	cases := []struct {
		line, rule string
		fix        []string
	}{
		{`exec: "go": executable file not found in $PATH`, "not-on-path", []string{`add {source: "/usr/local/go/bin", target: "/usr/local/go/bin"} to mounts`, `env: ["PATH"]`}},
		{`mcpolicy exec: command "go" not found in the server's PATH`, "not-on-path", []string{`"/usr/local/go/bin/go"`}},
		{`bwrap: execvp go: No such file or directory`, "not-on-path", []string{"/usr/local/go/bin"}},
		{`FileNotFoundError: [Errno 2] No such file or directory: 'nowhere-tool'`, "not-on-path", []string{"not on this machine's PATH either"}},
		{`Error: spawn go ENOENT`, "not-on-path", []string{"/usr/local/go/bin"}},
		{`mkdir /home/u/.cache/gopls: read-only file system`, "read-only", []string{`set scratch: {target: "/home/u/.cache/gopls"`}},
		{`open /data/index.db: read-only file system`, "read-only", []string{`read-only mount of /srv/data at /data`, `mode: "rw"`}},
		{`open /etc/mcp-nowhere/conf.json: no such file or directory`, "missing-path", []string{"does not exist on this machine either"}},
		{`Error: ENOENT: no such file or directory, open '/usr'`, "missing-path", []string{`add {source: "/usr", target: "/usr"} to mounts`}},
		{`PermissionError: [Errno 13] Permission denied: '/out/state.json'`, "permission", []string{"chown -R 1000:1000 /srv/out"}},
		{`open /data/x: permission denied`, "permission", []string{`read-only mount of /srv/data`}},
		{`open /elsewhere/x: permission denied`, "permission", []string{`add {source: "/elsewhere/x", target: "/elsewhere/x"} to mounts`}},
	}
	for _, c := range cases {
		p := plan()
		ctx := &Context{Plan: p, Plans: []*compiler.Plan{p}, Backend: "bwrap", LookPath: lookPath,
			Unwritable: map[string]string{"/srv/out": "give it the folder: chown -R 1000:1000 /srv/out, or user: \"invoker\""}}
		got := Explain(ctx, nil, []string{"starting", c.line})
		if len(got) != 1 || got[0].Rule != c.rule {
			t.Errorf("%q: %+v, want rule %s", c.line, got, c.rule)
			continue
		}
		for _, want := range c.fix {
			if !strings.Contains(got[0].Fix, want) {
				t.Errorf("%q: fix %q does not say %q", c.line, got[0].Fix, want)
			}
		}
	}
}

// A refusal comes first, with the launcher's fix; an end no rule explains
// says what is known; a server's escape sequences are shown escaped.
func TestExplainRecord(t *testing.T) {
	p := plan()
	ctx := &Context{Plan: p, Plans: []*compiler.Plan{p}, Backend: "bwrap"}
	got := Explain(ctx, &launchlog.Record{Refused: "artefact digest differs", Fix: "mcpolicy build"}, nil)
	if len(got) != 1 || got[0].Rule != "refused" || got[0].Fix != "mcpolicy build" {
		t.Errorf("refusal: %+v", got)
	}
	code := 2
	got = Explain(ctx, &launchlog.Record{Exit: &code, Stderr: []string{"panic: \x1b]52;c;ZXZpbA==\x07boom"}}, nil)
	if len(got) != 1 || got[0].Rule != "unexplained" || !strings.Contains(got[0].What, "status 2") {
		t.Errorf("exit: %+v", got)
	}
	got = Explain(ctx, nil, []string{"open /etc/x\x1b[2J: no such file or directory"})
	if strings.ContainsRune(got[0].Line, 0x1b) || strings.ContainsRune(got[0].What, 0x1b) {
		t.Errorf("an escape sequence passed: %+v", got)
	}
}
