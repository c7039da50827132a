package escape_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

// The cross-server scenarios (#32): two servers in one policy, the
// attacker holding read-write (it accepts rw-holds-other-server, so the
// policy builds) what the victim runs, the victim with an env grant. On
// the bind backends the attacker holds the project; Landlock cannot hold
// a read-write project root, so there it holds a data folder (shared/,
// tools/) with the victim's script in it. The attacker rewrites the
// victim's script; the victim's next launch, through its unchanged entry,
// must be refused (exit 8) and print nothing of its token. Without the
// accept, mcpolicy build refuses, naming both grants. Weakened: the same
// entry without its program pin runs what the attacker wrote, with the
// victim's grants.
var crossServerScenarios = []scenario{
	{
		name: "cross-server-program", spec: crossServerSpec, landlockSpec: &crossServerLandlockSpec,
		backends: allBackends, weakBackends: []string{"bwrap", "landlock"},
		real: func(t *testing.T, sb *sandbox) {
			switch sb.backend {
			case "bwrap":
				requireCrossServerRefused(t, sb, "bin/victim.sh", "mcpolicy.cue:6:13: servers.attacker.mounts[0].source", `holds the script of server "victim"`, "mcpolicy.cue:10:2)")
			case "landlock":
				requireCrossServerRefused(t, sb, "shared/victim.sh", "mcpolicy.cue:7:109: servers.attacker.mounts[2].source", `holds the script of server "victim", ${PROJECT_ROOT}/shared/victim.sh`, "mcpolicy.cue:11:2)")
			}
			step := rewriteScript(sb, "bin/victim.sh", "shared/victim.sh")
			sb.launchEntry(t, step).requireSucceeded(t, sb.backend, step.name)
			requireServerRefused(t, sb, "victim")
		},
		weak: func(t *testing.T, sb *sandbox) {
			step := rewriteScript(sb, "bin/victim.sh", "shared/victim.sh")
			sb.launchEntry(t, step).requireSucceeded(t, sb.backend, step.name)
			requireServerRan(t, sb, "victim")
		},
	},
	{
		name: "cross-server-noext", spec: crossServerNoExtSpec, landlockSpec: &crossServerNoExtLandlockSpec,
		backends: allBackends, weakBackends: []string{"bwrap", "landlock"},
		real: func(t *testing.T, sb *sandbox) {
			switch sb.backend {
			case "bwrap":
				requireCrossServerRefused(t, sb, "tools/victim", "mcpolicy.cue:6:50: servers.attacker.mounts[1].source", `holds the script of server "victim", ${PROJECT_ROOT}/tools/victim`, "mcpolicy.cue:10:2)")
			case "landlock":
				requireCrossServerRefused(t, sb, "tools/victim", "mcpolicy.cue:7:109: servers.attacker.mounts[2].source", `holds the script of server "victim", ${PROJECT_ROOT}/tools/victim`, "mcpolicy.cue:11:2)")
			}
			step := rewriteScript(sb, "tools/victim", "tools/victim")
			sb.launchEntry(t, step).requireSucceeded(t, sb.backend, step.name)
			requireServerRefused(t, sb, "victim")
		},
		weak: func(t *testing.T, sb *sandbox) {
			step := rewriteScript(sb, "tools/victim", "tools/victim")
			sb.launchEntry(t, step).requireSucceeded(t, sb.backend, step.name)
			requireServerRan(t, sb, "victim")
		},
	},
	{
		// A mount source rewritten: config/, which two servers mount
		// read-only at /cfg, lies in the attacker's read-write grant.
		// The victim runs a script there (sh /cfg/start.sh): the
		// script is pinned, and its rewrite refused (exit 8). The reader
		// runs what a config file there names (exec $(cat
		// /cfg/command)): a file it reads, not one it runs, is not
		// pinned (the accepted rw-holds-other-server gives it away), so
		// the write must be seen: check flags it, naming the reader,
		// before the reader's next launch. Weakened: the accepted
		// policy's entries without their pins, where both run the
		// attacker's code.
		name: "cross-server-source", spec: crossServerSourceSpec, landlockSpec: &crossServerSourceLandlockSpec,
		backends: allBackends, weakBackends: []string{"bwrap", "landlock"},
		real: func(t *testing.T, sb *sandbox) {
			switch sb.backend {
			case "bwrap":
				requireCrossServerRefused(t, sb, "config/start.sh", "mcpolicy.cue:6:50: servers.attacker.mounts[1].source",
					`holds the script of server "victim", ${PROJECT_ROOT}/config/start.sh`, `holds the mount source of server "reader", ${PROJECT_ROOT}/config`, "mcpolicy.cue:10:2)", "mcpolicy.cue:20:13)")
			case "landlock":
				requireCrossServerRefused(t, sb, "config/start.sh", "mcpolicy.cue:7:109: servers.attacker.mounts[2].source",
					`holds the script of server "victim", ${PROJECT_ROOT}/config/start.sh`, `holds the workdir of server "reader", ${PROJECT_ROOT}/config`, "mcpolicy.cue:11:2)", "mcpolicy.cue:18:2)")
			}
			steps := rewriteConfig(sb)
			sb.launchEntry(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			requireServerRefused(t, sb, "victim")
			// What the reader reads is the accepted degradation's to
			// give: no pin covers a file a server reads. It is not
			// unseen: before the reader's next launch, check names the
			// write as one another server mounts (exit 5).
			code, out := sb.mcpolicyTry(t, []string{"XDG_STATE_HOME="}, "check", "-p", sb.root)
			if code != exitFindings || !lineHas(out, "config/command", "other-server", "mounted by reader") {
				t.Errorf("%s: check after the attacker's session: exit %d, want %d naming config/command as other-server, mounted by reader\n%s", sb.backend, code, exitFindings, out)
			} else {
				t.Logf("%s: check: exit %d: %s", sb.backend, code, lastLines([]byte(out), 2))
			}
			o := sb.launchServer(t, "reader", false, false)
			t.Logf("%s: the reader's next launch (what rw-holds-other-server accepts): exit %d, ran the attacker's command: %v", sb.backend, o.code, strings.Contains(o.stdout+o.stderr, victimToken))
		},
		weak: func(t *testing.T, sb *sandbox) {
			steps := rewriteConfig(sb)
			sb.launchEntry(t, steps...).requireSucceeded(t, sb.backend, names(steps)...)
			requireServerRan(t, sb, "victim")
			requireServerRan(t, sb, "reader")
		},
	},
}

// requireServerRefused: the server's next launch through its unchanged
// entry is refused (exit 8), nothing of it run, its token nowhere.
func requireServerRefused(t *testing.T, sb *sandbox, server string) {
	t.Helper()
	o := sb.launchServer(t, server, false, true)
	if strings.Contains(o.stdout+o.stderr, victimToken) || o.code != exitTampered || strings.Contains(o.stdout, server+"-ok") {
		t.Errorf("%s: the %s's next launch: exit %d, want %d and nothing run\nstdout:\n%s\nstderr:\n%s", sb.backend, server, o.code, exitTampered, o.stdout, lastLines([]byte(o.stderr), 5))
	} else {
		t.Logf("%s: the %s's next launch was refused: %s", sb.backend, server, lastLines([]byte(o.stderr), 1))
	}
	if sb.backend == "landlock" {
		// By hand, as a person starts it: mcpolicy exec compiles the
		// policy and must refuse the rewritten program as the entry does.
		code, out := sb.mcpolicyTry(t, []string{"GITHUB_TOKEN=" + victimToken}, "exec", "--policy", sb.root, "--server", server)
		if code != exitTampered || strings.Contains(out, victimToken) || strings.Contains(out, server+"-ok") {
			t.Errorf("%s: mcpolicy exec --server %s after the rewrite: exit %d, want %d and nothing run\n%s", sb.backend, server, code, exitTampered, out)
		} else {
			t.Logf("%s: mcpolicy exec --server %s refused: %s", sb.backend, server, lastLines([]byte(out), 1))
		}
	}
}

// requireServerRan is the weakened wiring's check: the server's entry
// without its pins ran what the attacker wrote, which printed its token.
func requireServerRan(t *testing.T, sb *sandbox, server string) {
	t.Helper()
	if o := sb.launchServer(t, server, true, false); !strings.Contains(o.stdout, "TOKEN="+victimToken) {
		t.Errorf("weakened %s: the %s's entry without its pin did not run the rewrite (exit %d): the suite cannot see the attack\nstdout:\n%s\nstderr:\n%s", sb.backend, server, o.code, o.stdout, lastLines([]byte(o.stderr), 5))
	} else {
		t.Logf("weakened %s: the %s ran the attacker's code and printed its token", sb.backend, server)
	}
}

// rewriteScript is the attacker's payload: the victim's script,
// rewritten through the attacker's read-write grant; bind is its path
// below the project on the bind backends (the project at /workspace),
// landlock on Landlock (host paths, the payload in the project).
func rewriteScript(sb *sandbox, bind, landlock string) step {
	p := "/workspace/" + bind
	if sb.backend == "landlock" {
		p = landlock
	}
	return may("rewrite the victim's script", fmt.Sprintf(`printf '#!/bin/sh\necho TOKEN=$GITHUB_TOKEN\n' > %s && cat %[1]s`, p))
}

// rewriteConfig rewrites, through the attacker's grant of config/, the
// victim's script and the command the reader's config names.
func rewriteConfig(sb *sandbox) []step {
	dir := "/workspace/config"
	if sb.backend == "landlock" {
		dir = "config"
	}
	return []step{
		may("rewrite the victim's script in config/", fmt.Sprintf(`printf '#!/bin/sh\necho TOKEN=$GITHUB_TOKEN\n' > %s/start.sh && cat %[1]s/start.sh`, dir)),
		may("rewrite the command config/command names", fmt.Sprintf(`printf 'env\n' > %s/command && cat %[1]s/command`, dir)),
	}
}

// crossServerNoExtSpec: the victim runs `/bin/sh` on tools/victim, no
// extension, from a read-only mount of the project; the attacker holds
// tools/ read-write.
var crossServerNoExtSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "/workspace/attack.sh"]
		image:   %q
		mounts: [{source: ".", target: "/workspace"}, {source: "tools", target: "/workspace/tools", mode: "rw"}, {source: "src", target: "/workspace/src", mode: "rw"}]
		backends: ["bwrap", "docker"]
		accept: ["rw-holds-other-server"]
	}
	victim: {
		command: ["/bin/sh", "/opt/p/tools/victim"]
		image:   %[1]q
		mounts: [{source: ".", target: "/opt/p"}]
		env: ["GITHUB_TOKEN"]
		backends: ["bwrap", "docker"]
	}
}
`},
	files: map[string]string{"tools/victim": "echo victim-ok\n", ".gitignore": "tools/\n"},
}

// crossServerNoExtLandlockSpec is crossServerNoExtSpec on Landlock: the
// attacker holds the project read-only, data/ and tools/ read-write.
var crossServerNoExtLandlockSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", landlockCrossServer(`{source: "tools", target: "/tools", mode: "rw"}`, `
		command: ["/bin/sh", "/opt/p/tools/victim"]
		mounts: [{source: ".", target: "/opt/p"}]`)},
	files: map[string]string{"tools/victim": "echo victim-ok\n", ".gitignore": "tools/\n"},
}

// landlockCrossServer is a Landlock policy of two servers: the attacker
// (the project read-only, data/ and grant read-write, accepting
// rw-holds-other-server) and victim (its command and mounts, the token's
// env grant); more are further servers.
func landlockCrossServer(grant, victim string, more ...string) string {
	return `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "attack.sh"]
		workdir: "/workspace"
		runtime: "system"
		mounts: [{source: ".", target: "/workspace", mode: "ro"}, {source: "data", target: "/data", mode: "rw"}, ` + grant + `]
		backends: ["landlock"]
		accept: ["rw-holds-other-server"]
	}
	victim: {` + victim + `
		runtime: "system"
		env: ["GITHUB_TOKEN"]
		backends: ["landlock"]
	}
` + strings.Join(more, "") + `}
`
}

// crossServerLandlockSpec is crossServerSpec on Landlock: the victim's
// script in shared/, which the attacker holds read-write.
var crossServerLandlockSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", landlockCrossServer(`{source: "shared", target: "/shared", mode: "rw"}`, `
		command: ["/bin/sh", "/opt/shared/victim.sh"]
		mounts: [{source: "shared", target: "/opt/shared"}]`)},
	files: map[string]string{"shared/victim.sh": "#!/bin/sh\necho victim-ok\n", ".gitignore": "shared/\n"},
}

// crossServerSourceSpec: config/, mounted read-only at /cfg by the victim
// (which runs its start.sh) and the reader (which runs what its
// command file names), lies in the attacker's read-write grant.
var crossServerSourceSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "/workspace/attack.sh"]
		image:   %q
		mounts: [{source: ".", target: "/workspace"}, {source: "config", target: "/workspace/config", mode: "rw"}, {source: "src", target: "/workspace/src", mode: "rw"}]
		backends: ["bwrap", "docker"]
		accept: ["rw-holds-other-server"]
	}
	victim: {
		command: ["/bin/sh", "/cfg/start.sh"]
		image:   %[1]q
		mounts: [{source: "config", target: "/cfg"}]
		env: ["GITHUB_TOKEN"]
		backends: ["bwrap", "docker"]
	}
	reader: {
		command: ["/bin/sh", "-c", "exec $(cat /cfg/command)"]
		image:   %[1]q
		mounts: [{source: "config", target: "/cfg"}]
		env: ["GITHUB_TOKEN"]
		backends: ["bwrap", "docker"]
	}
}
`},
	files: crossServerSourceFiles,
}

var crossServerSourceFiles = map[string]string{"config/start.sh": "#!/bin/sh\necho victim-ok\n", "config/command": "echo reader-ok\n", ".gitignore": "config/\n"}

// crossServerSourceLandlockSpec is crossServerSourceSpec on Landlock,
// where the server sees host paths: the reader reads its command file
// from its workdir, /cfg (the host's config/).
var crossServerSourceLandlockSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", landlockCrossServer(`{source: "config", target: "/config", mode: "rw"}`, `
		command: ["/bin/sh", "/cfg/start.sh"]
		mounts: [{source: "config", target: "/cfg"}]`, `	reader: {
		command: ["/bin/sh", "-c", "exec $(cat command)"]
		workdir: "/cfg"
		runtime: "system"
		mounts: [{source: "config", target: "/cfg"}]
		env: ["GITHUB_TOKEN"]
		backends: ["landlock"]
	}
`)},
	files: crossServerSourceFiles,
}

const victimToken = "planted-github-token"

const crossServerPolicy = `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "/workspace/attack.sh"]
		image:   %q
		mounts: [{source: ".", target: "/workspace", mode: "rw"}]
		backends: ["bwrap", "docker"]
		accept: ["rw-holds-other-server"]
	}
	victim: {
		command: ["/bin/sh", "/opt/bin/victim.sh"]
		image:   %[1]q
		mounts: [{source: "bin", target: "/opt/bin"}]
		env: ["GITHUB_TOKEN"]
		backends: ["bwrap", "docker"]
	}
}
`

var crossServerSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", crossServerPolicy},
	files:  map[string]string{"bin/victim.sh": "#!/bin/sh\necho victim-ok\n", ".gitignore": "bin/\n"},
}

// launchServer spawns server's entry as the client wrote it, the token in
// the environment; weak drops the entry's program pins, and pinned
// requires the entry to carry one.
func (sb *sandbox) launchServer(t *testing.T, server string, weak, pinned bool) outcome {
	t.Helper()
	b, err := os.ReadFile(sb.entryFile())
	must(t, err)
	b, err = hujson.Standardize(b)
	must(t, err)
	var cfg struct {
		MCPServers map[string]entry `json:"mcpServers"`
	}
	must(t, json.Unmarshal(b, &cfg))
	e, ok := cfg.MCPServers[server]
	if !ok {
		t.Fatalf("no entry for %s:\n%s", server, b)
	}
	args := e.Args
	if weak {
		args = nil
		for i := 0; i < len(e.Args); i++ {
			if e.Args[i] == "--program-sha256" {
				i++
				continue
			}
			args = append(args, e.Args[i])
		}
		args = withoutArtefactPins(t, sb, args)
	} else if pinned && !strings.Contains(strings.Join(args, " "), "--program-sha256 ") {
		t.Errorf("%s: the %s's entry pins no program: %s", sb.backend, server, shellQuote(args))
	}
	env := map[string]string{"GITHUB_TOKEN": victimToken}
	for k, v := range e.Env {
		if k != "GITHUB_TOKEN" {
			env[k] = v
		}
	}
	return sb.launchWith(t, server+" entry", e.Command, args, launchOpts{env: env}, nil)
}

// withoutArtefactPins: today's artefact, which requires no pin (bwrap,
// Landlock), in place of the entry's, its digest pinned instead.
func withoutArtefactPins(t *testing.T, sb *sandbox, args []string) []string {
	t.Helper()
	i := slices.Index(args, "--sha256")
	if i < 0 {
		return args // an engine entry: the pins are the entry's alone
	}
	b, err := os.ReadFile(args[len(args)-1])
	must(t, err)
	var spec map[string]any
	must(t, json.Unmarshal(b, &spec))
	delete(spec, "programPins")
	b, err = json.MarshalIndent(spec, "", "  ")
	must(t, err)
	// Beside the artefact: a pinned launch runs only at its artefact's
	// own project.
	weak := strings.TrimSuffix(args[len(args)-1], ".json") + "-weak.json"
	must(t, os.WriteFile(weak, b, 0o644))
	sum := sha256.Sum256(b)
	args = slices.Clone(args)
	args[i+1], args[len(args)-1] = "sha256:"+hex.EncodeToString(sum[:]), weak
	return args
}

// requireCrossServerRefused: without the accept, the build refuses the
// attacker's grant, at its position and naming the victim's.
func requireCrossServerRefused(t *testing.T, sb *sandbox, script string, want ...string) {
	t.Helper()
	dir := t.TempDir()
	policy, err := os.ReadFile(filepath.Join(sb.root, "mcpolicy.cue"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "mcpolicy.cue"), []byte(strings.Replace(string(policy), `accept: ["rw-holds-other-server"]`, "", 1)), 0o644))
	for _, own := range []string{"src", "data"} { // the attacker's own
		must(t, os.MkdirAll(filepath.Join(dir, own), 0o755))
	}
	must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(script)), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, script), []byte("echo\n"), 0o644))
	code, out := sb.mcpolicyTry(t, nil, "build", dir)
	for _, want := range append(want, `accept: ["rw-holds-other-server"] on server "attacker"`) {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("mcpolicy build without the accept: exit %d, want 2 and %q:\n%s", code, want, out)
		}
	}
}
