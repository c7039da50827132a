package escape_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// otherGrantPolicy: the attacker may write ~/shared (besides the
// project); victim and egress are two other servers of the policy, egress
// with an allowlist (its wrapper starts mcpolicy run, not the launcher).
const otherGrantPolicy = `version: "v1"
servers: {
	attacker: {
		command: ["/bin/sh", "/workspace/attack.sh"]
		mounts: [
			{source: ".", target: "/workspace", mode: "rw"},
			{source: "~/shared", target: "/shared", mode: "rw"},
		]
		backends: ["bwrap"]
	}
	victim: {
		command: ["/bin/true"]
		backends: ["bwrap"]
	}
	egress: {
		command: ["/bin/true"]
		backends: ["bwrap"]
		network: allow: ["example.com:443"]
	}
}
`

// TestWrapperRefusesOtherServersGrant: a server plants mcpolicy-launch,
// bwrap and mcpolicy in its read-write grant (~/shared/bin); a person then
// starts ANOTHER server of the policy by hand, with MCPOLICY_LAUNCH,
// MCPOLICY_BWRAP or MCPOLICY naming the planted program, or with that
// folder on PATH. The other server's wrapper must refuse it (exit 126,
// and why), as `mcpolicy client --write` refuses such a launcher for the
// entry: it would run unconfined, as the developer, and start whatever
// it chose. The planted program never runs (its marker stays absent) and
// nothing on the host changes. Weakened: the wrapper built before, whose
// held list was its own server's grants only, runs it.
func TestWrapperRefusesOtherServersGrant(t *testing.T) {
	s := newSuite(t)
	const backend = "bwrap"
	s.require(t, backend)
	attempts := func(sb *sandbox) []struct{ name, server, env, value string } {
		bin := filepath.Join(sb.home, "shared", "bin")
		path := bin + ":" + filepath.Dir(s.launcher) + ":" + os.Getenv("PATH")
		return []struct{ name, server, env, value string }{
			{"MCPOLICY_LAUNCH", "victim", "MCPOLICY_LAUNCH", filepath.Join(bin, "mcpolicy-launch")},
			{"MCPOLICY_BWRAP", "victim", "MCPOLICY_BWRAP", filepath.Join(bin, "bwrap")},
			{"PATH (mcpolicy-launch)", "victim", "PATH", path},
			{"MCPOLICY", "egress", "MCPOLICY", filepath.Join(bin, "mcpolicy")},
			{"PATH (mcpolicy)", "egress", "PATH", path},
		}
	}
	t.Run(backend, func(t *testing.T) {
		sb := otherGrantSandbox(t, s, backend)
		for _, a := range attempts(sb) {
			t.Run(strings.NewReplacer(" ", "_", "(", "", ")", "").Replace(a.name), func(t *testing.T) {
				before := sb.snapshot(t)
				o := sb.byHandServer(t, a.server, a.env, a.value)
				if m := sb.markersFound(t); len(m) > 0 {
					t.Fatalf("sh .mcpolicy/bwrap/%s.sh with %s=%s ran what the attacker planted: markers %v\nstderr:\n%s", a.server, a.env, a.value, m, o.stderr)
				}
				if o.code != 126 || !strings.Contains(o.stderr, "refused") || !strings.Contains(o.stderr, filepath.Join(sb.home, "shared", "bin")) {
					t.Errorf("sh .mcpolicy/bwrap/%s.sh with %s: exit %d; want 126, the planted program named and refused\nstderr:\n%s", a.server, a.env, o.code, o.stderr)
				} else {
					t.Logf("%s.sh with %s: exit %d: %s", a.server, a.env, o.code, lastLines([]byte(o.stderr), 1))
				}
				sb.requireUnchanged(t, before)
			})
		}
	})
	t.Run("weakened-"+backend, func(t *testing.T) {
		sb := otherGrantSandbox(t, s, backend)
		// The wrappers as built before: held lists only their own
		// server's grants (none outside the project here).
		for _, server := range []string{"victim", "egress"} {
			p := filepath.Join(sb.root, ".mcpolicy", "bwrap", server+".sh")
			b, err := os.ReadFile(p)
			must(t, err)
			old := strings.Replace(string(b), `for g in "$root" "$home"/shared; do`, `for g in "$root"; do`, 1)
			if old == string(b) {
				t.Fatalf("%s.sh does not hold ~/shared in its held list:\n%s", server, b)
			}
			must(t, os.WriteFile(p, []byte(old), 0o666))
		}
		// The launcher before it checked bwrap against every server's
		// grants too: without the attacker's plan it knows none of them.
		must(t, os.Remove(filepath.Join(sb.root, ".mcpolicy", "plan", "attacker.json")))
		for _, a := range attempts(sb) {
			for _, m := range sb.markersFound(t) {
				os.Remove(sb.marker(m))
			}
			o := sb.byHandServer(t, a.server, a.env, a.value)
			if m := sb.markersFound(t); len(m) == 0 {
				t.Errorf("weakened: %s.sh with %s did not run the planted program (exit %d): the test cannot see the attack\nstderr:\n%s", a.server, a.env, o.code, o.stderr)
			} else {
				t.Logf("weakened: %s.sh with %s ran the attacker's %v on the host, unconfined", a.server, a.env, m)
			}
		}
	})
}

// otherGrantSandbox builds otherGrantPolicy's project, then has the
// attacker, through its client entry, plant mcpolicy-launch, bwrap and
// mcpolicy in ~/shared/bin: each leaves a marker on the host when run.
func otherGrantSandbox(t *testing.T, s *suite, backend string) *sandbox {
	t.Helper()
	sb := s.sandbox(t, backend, projectSpec{noBuild: true, policy: [2]string{"mcpolicy.cue", otherGrantPolicy}})
	shared := filepath.Join(sb.home, "shared")
	must(t, os.MkdirAll(shared, 0o777))
	must(t, os.Chmod(shared, 0o777)) // the sandbox's user (1000) writes it
	sb.mcpolicyRun(t, "build", sb.root)
	sb.mcpolicyRun(t, sb.clientArgs(backend)...)
	sb.git(t, "add", "-A")
	sb.git(t, "commit", "-q", "-m", "confinement")
	must(t, os.Chmod(sb.markers, 0o777))
	// As sandbox does: the sandbox's user writes wherever the mounts allow.
	if out, err := exec.Command("chmod", "-R", "a+rwX", sb.root).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v\n%s", err, out)
	}
	sb.entry = sb.readEntry(t)
	var steps []step
	for _, name := range []string{"mcpolicy-launch", "bwrap", "mcpolicy"} {
		body := fmt.Sprintf("#!/bin/sh\necho planted >&2\n: > %s\n", shq(sb.marker("planted-"+name)))
		steps = append(steps, may("plant "+name+" in ~/shared/bin", fmt.Sprintf("mkdir -p /shared/bin && printf '%%s' %s > /shared/bin/%s && chmod 755 /shared/bin/%s", shq(body), name, name)))
	}
	sb.launchEntry(t, steps...).requireSucceeded(t, backend, names(steps)...)
	if m := sb.markersFound(t); len(m) > 0 {
		t.Fatalf("a planted program ran while it was planted: %v", m)
	}
	return sb
}

// byHandServer runs sh .mcpolicy/bwrap/SERVER.sh as a developer, with
// env=value on top of their environment.
func (sb *sandbox) byHandServer(t *testing.T, server, env, value string) outcome {
	t.Helper()
	opts := sb.developer(t)
	opts.env[env] = value
	return sb.launchWith(t, fmt.Sprintf("%s=%s sh .mcpolicy/bwrap/%s.sh (by hand)", env, value, server), "/bin/sh", []string{".mcpolicy/bwrap/" + server + ".sh"}, opts, nil)
}
