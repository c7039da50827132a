package entry

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/clientcfg"
	"github.com/mcpolicy/mcpolicy/compiler"
)

// TestTarget: --file is made absolute, --user (or a client with no
// project file) is the user-scope file, else the project's, the only
// portable one.
func TestTarget(t *testing.T) {
	vscode, _ := clientcfg.LookupClient("vscode")
	desktop, _ := clientcfg.LookupClient("claude-desktop")
	wd, _ := os.Getwd()
	for _, tc := range []struct {
		c        *clientcfg.Client
		file     string
		user     bool
		want     string
		portable bool
	}{
		{vscode, "cfg.json", false, filepath.Join(wd, "cfg.json"), false},
		{vscode, "", true, vscode.User("/home/dev"), false},
		{vscode, "", false, "/p/.vscode/mcp.json", true},
		{desktop, "", false, desktop.User("/home/dev"), false},
	} {
		got, portable, err := Target(tc.c, tc.file, tc.user, "/p", "/home/dev")
		if err != nil || got != tc.want || portable != tc.portable {
			t.Errorf("%s file=%q user=%v: %q %v %v, want %q %v", tc.c.Name, tc.file, tc.user, got, portable, err, tc.want, tc.portable)
		}
	}
}

// TestEntriesSelectAndRefuse: Entries renders the selected servers'
// entries only, says where a client that passes no environment takes it
// from, and refuses (RefusedError) a launcher another server may write,
// or a client file one may write.
func TestEntriesSelectAndRefuse(t *testing.T) {
	desktop, _ := clientcfg.LookupClient("claude-desktop")
	home := t.TempDir()
	var plans []*compiler.Plan
	for _, name := range []string{"a", "b"} {
		p := seedPlan()
		p.Server, p.Backends = name, []string{"docker"}
		built(t, "/p/.mcpolicy", p)
		plans = append(plans, p)
	}
	envFile := filepath.Join(t.TempDir(), "env")
	var notes bytes.Buffer
	o := EntriesOptions{Client: desktop, Plans: plans, Servers: []string{"b"}, Root: "/p", Home: home,
		OutDir: "/p/.mcpolicy", Self: "/usr/local/bin/mcpolicy", EnvFile: envFile, Notes: &notes}
	es, err := Entries(o)
	if err != nil || len(es) != 1 || es[0].Server != "b" {
		t.Fatalf("--server b: %v %+v", err, es)
	}
	if want := `"b" takes GITHUB_TOKEN from ` + envFile + " at spawn, which does not exist yet"; !strings.Contains(notes.String(), want) {
		t.Errorf("notes: %q, want %q", notes.String(), want)
	}
	out, err := MergeEntries("/p/cfg.json", nil, desktop, es, false)
	if err != nil || !strings.Contains(string(out), `"b"`) || strings.Contains(string(out), `"a"`) {
		t.Errorf("merged: %v\n%s", err, out)
	}

	// Server a may write the folder the launcher lies in: b's entry is
	// refused too.
	plans[0].Mounts = []compiler.Mount{{Source: compiler.HostPath{Base: compiler.Home, Rel: "tools"}, Target: "/tools", Mode: compiler.ReadWrite}}
	o.Self = filepath.Join(home, "tools", "mcpolicy")
	var re *RefusedError
	if _, err := Entries(o); !errors.As(err, &re) || !strings.Contains(err.Error(), "launcher") {
		t.Errorf("launcher in a's grant: %v", err)
	}
	if err := CheckTarget(plans, filepath.Join(home, "tools", "mcp.json"), "/p", home); !errors.As(err, &re) {
		t.Errorf("client file in a's grant: %v", err)
	}
	if err := CheckTarget(plans, filepath.Join(home, "mcp.json"), "/p", home); err != nil {
		t.Errorf("client file outside every grant: %v", err)
	}
}
