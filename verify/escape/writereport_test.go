package escape_test

import (
	"strings"
	"testing"
)

// The write report scenario: a mount cannot tell a server's write from
// ordinary work, so what a server plants in its read-write grant for the
// host to run (bytecode python prefers to the source, a .pth python runs
// at start-up, an executable script) must at least be seen. After the
// client entry returns, `mcpolicy check` (with the entry's HOME, so the
// same state folder) must fail naming each planted file, and `mcpolicy
// sessions` list them flagged. The weakened wiring runs the same attack
// with no launcher, so no session is recorded: check sees nothing.
var writeReportScenarios = []scenario{
	{
		name: "write-report", backends: allBackends, weakBackend: bare,
		real: func(t *testing.T, sb *sandbox) {
			steps, planted := writeReportSteps(sb)
			o := sb.launchEntry(t, steps...)
			o.requireSucceeded(t, sb.backend, names(steps)...)
			code, out := sb.mcpolicyTry(t, []string{"XDG_STATE_HOME="}, "check", "-p", sb.root)
			if code != exitFindings {
				t.Errorf("%s: mcpolicy check after the planting session: exit %d, want %d\n%s", sb.backend, code, exitFindings, out)
			}
			for name, kind := range planted {
				if !strings.Contains(out, name) || !strings.Contains(out, kind) || !strings.Contains(out, "server attacker") {
					t.Errorf("%s: mcpolicy check does not name %s as %s of server attacker:\n%s", sb.backend, name, kind, out)
				}
			}
			code, out = sb.mcpolicyTry(t, []string{"XDG_STATE_HOME="}, "sessions", "-p", sb.root, "--details")
			if code != 0 || !strings.Contains(out, "flagged") {
				t.Errorf("%s: mcpolicy sessions: exit %d\n%s", sb.backend, code, out)
			}
			for name, kind := range planted {
				if !lineHas(out, name, "["+kind) {
					t.Errorf("%s: mcpolicy sessions does not list %s flagged %s:\n%s", sb.backend, name, kind, out)
				}
			}
			t.Logf("%s: mcpolicy sessions --details:\n%s", sb.backend, out)
		},
		weak: func(t *testing.T, sb *sandbox) {
			steps, _ := writeReportSteps(sb)
			sb.launchBare(t, launchOpts{}, steps...).requireSucceeded(t, "bare", names(steps)...)
			code, out := sb.mcpolicyTry(t, []string{"XDG_STATE_HOME="}, "check", "-p", sb.root)
			if code != 0 {
				t.Errorf("bare: with no session recorded, check still failed (exit %d): the scenario cannot tell the report from something else\n%s", code, out)
			} else {
				t.Logf("bare: the same planting with no launcher: check exit 0, nothing seen:\n%s", out)
			}
		},
	},
}

// exitFindings is check's exit code for a flagged write.
const exitFindings = 5

// writeReportSteps plant, in the grant the payload's folder is in, a
// package's bytecode, a .pth, an executable script, a conftest.py and a
// sitecustomize.py in an environment's site-packages; planted
// maps each name to the flag the report must give it.
func writeReportSteps(sb *sandbox) ([]step, map[string]string) {
	d := sb.ranDir
	return []step{
			may("plant bytecode in a package's __pycache__", "mkdir -p "+shq(d+"/pypkg/__pycache__")+" && echo bytecode > "+shq(d+"/pypkg/__pycache__/x.cpython-311.pyc")),
			may("plant a .pth", "echo 'import os' > "+shq(d+"/planted.pth")),
			may("plant an executable script", "printf '#!/bin/sh\\n' > "+shq(d+"/planted-run.sh")+" && chmod 755 "+shq(d+"/planted-run.sh")),
			// (A nested repository's .git, like venv, is a protected name:
			// planted, it makes the policy fail to compile for Landlock, and
			// check exits 2; the unit tests cover its flag.)
			may("plant a conftest.py", "echo 'import os' > "+shq(d+"/conftest.py")),
			may("plant a sitecustomize.py", "mkdir -p "+shq(d+"/pyenv/lib/site-packages")+" && echo 'import os' > "+shq(d+"/pyenv/lib/site-packages/sitecustomize.py")),
		}, map[string]string{
			"x.cpython-311.pyc": "bytecode", "planted.pth": "pth", "planted-run.sh": "executable",
			"conftest.py": "conftest", "sitecustomize.py": "sitecustomize",
		}
}

// lineHas: one line of out holds every part.
func lineHas(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}
