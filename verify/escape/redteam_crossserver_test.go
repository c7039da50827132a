package escape_test

import (
	"strings"
	"testing"
)

// redteam-cross-server-noext (#32 red team): the cross-server refusal
// and the program pin know a script by its extension. The victim runs
// `/bin/sh /opt/p/tools/victim` from a read-only mount of the project;
// the attacker holds tools/ read-write, without any accept. The policy
// builds, the victim's entry pins nothing, and the attacker's rewrite
// runs with the victim's token on its next launch. The scenario fails
// while that is so; weakened is the same wiring (the attack must work
// there, and does).
var redteamScenarios = []scenario{
	{
		name: "redteam-cross-server-noext", spec: redteamNoExtSpec, backends: []string{"bwrap"}, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			sb.launchEntry(t, rewriteNoExt).requireSucceeded(t, sb.backend, rewriteNoExt.name)
			o := sb.launchVictim(t, false)
			if strings.Contains(o.stdout+o.stderr, victimToken) || o.code != exitTampered {
				t.Errorf("%s: the victim's next launch ran the attacker's rewrite of tools/victim: exit %d, want %d and nothing run\nstdout:\n%s", sb.backend, o.code, exitTampered, o.stdout)
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			sb.launchEntry(t, rewriteNoExt).requireSucceeded(t, sb.backend, rewriteNoExt.name)
			if o := sb.launchVictim(t, true); !strings.Contains(o.stdout, "TOKEN="+victimToken) {
				t.Errorf("weakened %s: the victim did not run the rewrite (exit %d)\nstdout:\n%s\nstderr:\n%s", sb.backend, o.code, o.stdout, lastLines([]byte(o.stderr), 5))
			}
		},
	},
}

var rewriteNoExt = may("rewrite the victim's extension-less script", `printf 'echo TOKEN=$GITHUB_TOKEN\n' > /workspace/tools/victim && cat /workspace/tools/victim`)

var redteamNoExtSpec = projectSpec{
	policy: [2]string{"mcpolicy.cue", `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "/workspace/attack.sh"]
		mounts: [{source: ".", target: "/workspace"}, {source: "tools", target: "/workspace/tools", mode: "rw"}, {source: "src", target: "/workspace/src", mode: "rw"}]
		backends: ["bwrap"]
	}
	victim: {
		command: ["/bin/sh", "/opt/p/tools/victim"]
		mounts: [{source: ".", target: "/opt/p"}]
		env: ["GITHUB_TOKEN"]
		backends: ["bwrap"]
	}
}
`},
	files: map[string]string{"tools/victim": "echo victim-ok\n", ".gitignore": "tools/\n"},
}
