package clientcfg

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// DriftChange is one way a managed entry differs from its policy.
type DriftChange struct {
	Entry  position.Pos // the entry in the client file
	Policy position.Pos // the server in the policy
	Change diff.Change
}

// Drift compares the entries mcpolicy manages in a client file with the
// plans the policy compiles to, grant by grant. Entries that start
// mcpolicy itself (exec, the wrappers) read the policy at launch, and a
// run entry's pinned plan file is Pins' to compare: neither can drift;
// entries mcpolicy did not write are not its to judge.
func Drift(plans []*compiler.Plan, targets []*readback.Target, root string) []DriftChange {
	byName := map[string]*compiler.Plan{}
	for _, p := range plans {
		byName[p.Server] = p
	}
	var out []DriftChange
	for _, t := range targets {
		p := byName[t.Server]
		if p == nil || t.Plan == nil || t.Plan.Hash == "" {
			continue
		}
		want, got := comparable(p, root), comparable(t.Plan, root)
		if !t.FixedTop {
			// Only mcpolicy-launch leaves names unprotected; a bare
			// engine command has no fixed top level to say it.
			want.Unprotected, got.Unprotected = nil, nil
		}
		for _, c := range diff.Plans([]*compiler.Plan{want}, []*compiler.Plan{got}) {
			out = append(out, DriftChange{Entry: t.Pos, Policy: p.Pos, Change: c})
		}
	}
	return out
}

// comparable keeps what a launch command can say of a plan (mounts,
// scratch, env, network, user, limits, the names left unprotected, the
// credentials: an entry that starts the server without the proxy passes
// none, and one turned into an env grant must not compare equal), with
// absolute paths under the project given their symbolic base so both
// sides spell paths alike.
func comparable(p *compiler.Plan, root string) *compiler.Plan {
	q := &compiler.Plan{Server: p.Server, Pos: p.Pos, User: p.User, Scratch: p.Scratch, Env: p.Env,
		Network: p.Network, Subtractions: p.Subtractions, UserPos: p.UserPos, LimitsPos: p.LimitsPos,
		Unprotected: p.Unprotected, Credentials: p.Credentials, CredentialPos: p.CredentialPos}
	for _, m := range p.Mounts {
		if m.Source.Base == compiler.Absolute {
			if rel, err := filepath.Rel(root, m.Source.Rel); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				m.Source = compiler.HostPath{Base: compiler.ProjectRoot, Rel: filepath.ToSlash(rel)}
			}
		}
		q.Mounts = append(q.Mounts, m)
	}
	if q.Network.Mode == "" {
		q.Network.Mode = "none"
	}
	if q.Env == nil {
		q.Env = []compiler.EnvGrant{}
	}
	return q
}

// UserFiles are the user-scope client files on this machine (each
// client's, as `mcpolicy client --user` writes them; ~/.claude.json holds
// Claude Code's user and per-project entries): a hand edit there is seen
// by no code review. configHome ($XDG_CONFIG_HOME) moves the files under
// ~/.config. Only regular files are returned, each once.
func UserFiles(home, configHome string) []string {
	var out []string
	for _, f := range UserPlaces(home, configHome) {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			out = append(out, f)
		}
	}
	return out
}

// UserPlaces are the user-scope files UserFiles looks for, each once,
// whether or not it exists.
func UserPlaces(home, configHome string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for i := range Clients {
		if f := userFile(&Clients[i], home, configHome); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// userFile is c's user-scope file, under configHome when it lies in
// ~/.config.
func userFile(c *Client, home, configHome string) string {
	f := c.User(home)
	if rel, ok := strings.CutPrefix(f, filepath.Join(home, ".config")+string(filepath.Separator)); ok && configHome != "" {
		return filepath.Join(configHome, rel)
	}
	return f
}

// ForProject keeps the entries of a user-scope file that start servers for
// the project at root: the ones for every project, and the ones for that
// folder (~/.claude.json's projects.ROOT.mcpServers); another project's
// entries are that project's to check.
func ForProject(ts []*readback.Target, root string) []*readback.Target {
	var out []*readback.Target
	for _, t := range ts {
		if t.ProjectRoot == "" || filepath.Clean(t.ProjectRoot) == filepath.Clean(root) {
			out = append(out, t)
		}
	}
	return out
}

// UnmanagedEntry is an entry named for a server of the policy that
// mcpolicy does not recognise as its own.
type UnmanagedEntry struct {
	Entry  position.Pos
	Server string
	What   string
}

// NotManaged finds the entries named for a server of the policy that do
// not start it the way mcpolicy writes entries — through mcpolicy-launch
// with a pinned artefact, mcpolicy run/exec, or a wrapper build wrote:
// a command replaced by a hand-written `bwrap …` or a bare `docker run`
// starts the server with none of the launcher's checks, and Drift, which
// judges only mcpolicy's entries, would pass it by. An engine entry that
// pins no artefact (written before entries pinned one) is refused by the
// launcher at its next start: it is reported too.
//
// A launcher entry must pin the server's own artefact, OUT/BACKEND/
// SERVER.json of the project (outDir: its output folder): one that pins a
// file written elsewhere, or another server's, runs what check compares
// with nothing.
func NotManaged(plans []*compiler.Plan, ts []*readback.Target, outDir string) []UnmanagedEntry {
	ours := map[string]bool{}
	for _, p := range plans {
		ours[p.Server] = true
	}
	var out []UnmanagedEntry
	for _, t := range ts {
		if !ours[t.Server] {
			continue
		}
		way := fmt.Sprintf("run `mcpolicy client TARGET --write --force --server %s` (or rename the entry, if it is another server)", t.Server)
		own := t.Artefact == "" || filepath.Base(t.Artefact) == t.Server+".json" && filepath.Dir(filepath.Dir(filepath.Clean(t.Artefact))) == filepath.Clean(outDir)
		switch {
		case !own && (t.Launcher == readback.OwnLauncher || t.FixedTop):
			out = append(out, UnmanagedEntry{t.Pos, t.Server, fmt.Sprintf("pins %s, not the server's own artefact in %s: what it runs is compared with no policy; %s", t.Artefact, outDir, way)})
		case t.CompilesPolicy:
			out = append(out, UnmanagedEntry{t.Pos, t.Server, "the egress entry compiles the policy at every start (mcpolicy run --policy ... --plan), as earlier versions wrote it: entries now pin the plan build wrote; run `mcpolicy build`, then `mcpolicy client TARGET --write`"})
		case t.RunNotPinned != "":
			out = append(out, UnmanagedEntry{t.Pos, t.Server, fmt.Sprintf("the egress entry's mcpolicy run line is not the one mcpolicy writes (%s): what it starts is not held to the plan build wrote; run `mcpolicy build`, then `mcpolicy client TARGET --write`", t.RunNotPinned)})
		case t.Launcher == readback.OwnLauncher:
		case t.FixedTop && t.Artefact != "": // mcpolicy-launch --engine, pinned
		case t.FixedTop:
			out = append(out, UnmanagedEntry{t.Pos, t.Server, "the engine entry pins no artefact (no --sha256): the launcher refuses it (exit 8); run `mcpolicy client TARGET --write` again"})
		case t.Remote != "":
			out = append(out, UnmanagedEntry{t.Pos, t.Server, fmt.Sprintf("names the policy's server but connects to %s: the policy does not confine what runs there; %s", t.Remote, way)})
		default:
			what := t.Launcher
			if what == "" {
				what = "a command"
			}
			out = append(out, UnmanagedEntry{t.Pos, t.Server, fmt.Sprintf("names the policy's server but starts %s, not mcpolicy's entry: no pinned artefact, none of the launcher's checks, so nothing holds it to the policy; %s", what, way)})
		}
	}
	return out
}
