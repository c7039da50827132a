package escape_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tailscale/hujson"
)

// The cross-server scenario (#32): two servers in one policy, the
// attacker holding the project read-write (it accepts
// rw-holds-other-server, so the policy builds) and the victim running a
// script from the git-ignored bin/ with an env grant. The attacker
// rewrites the victim's script; the victim's next launch, through its
// unchanged entry, must be refused (exit 8) and print nothing of its
// token. Weakened: the same entry without its program pin runs what the
// attacker wrote, with the victim's grants.
var crossServerScenarios = []scenario{
	{
		name: "cross-server-program", spec: crossServerSpec, backends: bindBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			if sb.backend == bindBackends[0] {
				requireCrossServerRefused(t, sb, "bin/victim.sh", "mcpolicy.cue:6:13: servers.attacker.mounts[0].source", `holds the script of server "victim"`, "mcpolicy.cue:10:2)")
			}
			sb.launchEntry(t, rewriteVictim).requireSucceeded(t, sb.backend, rewriteVictim.name)
			o := sb.launchVictim(t, false)
			if strings.Contains(o.stdout+o.stderr, victimToken) || o.code != exitTampered || strings.Contains(o.stdout, "victim-ok") {
				t.Errorf("%s: the victim's next launch: exit %d, want %d and nothing run\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, exitTampered, o.stdout, lastLines([]byte(o.stderr), 5))
			} else {
				t.Logf("%s: the victim's next launch was refused: %s", sb.backend, lastLines([]byte(o.stderr), 1))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			sb.launchEntry(t, rewriteVictim).requireSucceeded(t, sb.backend, rewriteVictim.name)
			if o := sb.launchVictim(t, true); !strings.Contains(o.stdout, "TOKEN="+victimToken) {
				t.Errorf("weakened %s: the victim's entry without its pin did not run the rewritten script (exit %d): the suite cannot see the attack\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, o.stdout, lastLines([]byte(o.stderr), 5))
			} else {
				t.Logf("weakened %s: the victim ran the attacker's script and printed its token", sb.backend)
			}
		},
	},
	{
		name: "cross-server-noext", spec: crossServerNoExtSpec, backends: bindBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			if sb.backend == bindBackends[0] {
				requireCrossServerRefused(t, sb, "tools/victim", "mcpolicy.cue:6:50: servers.attacker.mounts[1].source", `holds the script of server "victim", ${PROJECT_ROOT}/tools/victim`, "mcpolicy.cue:10:2)")
			}
			sb.launchEntry(t, rewriteNoExt).requireSucceeded(t, sb.backend, rewriteNoExt.name)
			o := sb.launchVictim(t, false)
			if strings.Contains(o.stdout+o.stderr, victimToken) || o.code != exitTampered || strings.Contains(o.stdout, "victim-ok") {
				t.Errorf("%s: the victim's next launch ran the attacker's rewrite of tools/victim: exit %d, want %d and nothing run\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, exitTampered, o.stdout, lastLines([]byte(o.stderr), 5))
			} else {
				t.Logf("%s: the victim's next launch was refused: %s", sb.backend, lastLines([]byte(o.stderr), 1))
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			sb.launchEntry(t, rewriteNoExt).requireSucceeded(t, sb.backend, rewriteNoExt.name)
			if o := sb.launchVictim(t, true); !strings.Contains(o.stdout, "TOKEN="+victimToken) {
				t.Errorf("weakened %s: the victim's entry without its pin did not run the rewrite (exit %d)\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, o.stdout, lastLines([]byte(o.stderr), 5))
			}
		},
	},
}

// rewriteNoExt: the victim's extension-less script, rewritten through
// the attacker's read-write grant of tools/.
var rewriteNoExt = may("rewrite the victim's extension-less script", `printf 'echo TOKEN=$GITHUB_TOKEN\n' > /workspace/tools/victim && cat /workspace/tools/victim`)

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

const victimToken = "planted-github-token"

// rewriteVictim is the attacker's payload: the victim's script, rewritten
// through the attacker's read-write grant of the project.
var rewriteVictim = may("rewrite the victim's script", `printf '#!/bin/sh\necho TOKEN=$GITHUB_TOKEN\n' > /workspace/bin/victim.sh && cat /workspace/bin/victim.sh`)

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

// launchVictim spawns the victim's entry as the client wrote it, its token
// in the environment; weak drops the entry's program pins.
func (sb *sandbox) launchVictim(t *testing.T, weak bool) outcome {
	t.Helper()
	b, err := os.ReadFile(sb.entryFile())
	must(t, err)
	b, err = hujson.Standardize(b)
	must(t, err)
	var cfg struct {
		MCPServers map[string]entry `json:"mcpServers"`
	}
	must(t, json.Unmarshal(b, &cfg))
	e, ok := cfg.MCPServers["victim"]
	if !ok {
		t.Fatalf("no entry for victim:\n%s", b)
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
	} else if !strings.Contains(strings.Join(args, " "), "--program-sha256 ") {
		t.Errorf("%s: the victim's entry pins no program: %s", sb.backend, shellQuote(args))
	}
	env := map[string]string{"GITHUB_TOKEN": victimToken}
	for k, v := range e.Env {
		if k != "GITHUB_TOKEN" {
			env[k] = v
		}
	}
	return sb.launchWith(t, "victim entry", e.Command, args, launchOpts{env: env}, nil)
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
	weak := filepath.Join(sb.dir, "victim-weak.json")
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
	must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755)) // the attacker's own
	must(t, os.MkdirAll(filepath.Join(dir, filepath.Dir(script)), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, script), []byte("echo\n"), 0o644))
	code, out := sb.mcpolicyTry(t, nil, "build", dir)
	for _, want := range append(want, `accept: ["rw-holds-other-server"] on server "attacker"`) {
		if code != 2 || !strings.Contains(out, want) {
			t.Errorf("mcpolicy build without the accept: exit %d, want 2 and %q:\n%s", code, want, out)
		}
	}
}
