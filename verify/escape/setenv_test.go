package escape_test

import (
	"strings"
	"testing"
)

// setenvScenarios (#34): a policy's setenv value is the one the server
// gets, though the client's environment and the user's env file both set
// the same name: the reviewed artefact decides the server's configuration.
var setenvScenarios = []scenario{
	{
		name: "setenv-wins", backends: allBackends, weakBackend: "bwrap",
		spec:         setenvSpec(bindPolicy),
		landlockSpec: ptr(setenvSpec(landlockPolicy)),
		real: func(t *testing.T, sb *sandbox) {
			env := map[string]string{setenvName: "from-the-client"}
			for k, v := range sb.entry.Env {
				env[k] = v
			}
			o := sb.launchWith(t, "entry", sb.entry.Command, sb.entry.Args, launchOpts{env: env}, setenvSteps())
			o.requireSetenv(t, sb.backend, setenvValue)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// A naive loader that sets the env file's values after the
			// artefact's: the file's value wins, which the suite must see.
			o := sb.launchWeakBwrapWith(t, naiveEnv(t, sb.envFilePath(), nil), launchOpts{}, setenvSteps()...)
			o.requireSetenv(t, "weakened "+sb.backend, "from-the-env-file")
		},
	},
}

const (
	setenvName  = "GOFLAGS"
	setenvValue = "-mod=readonly"
	setenvStep  = "the server's " + setenvName
)

// setenvSpec is policy (bindPolicy or landlockPolicy) with a setenv and an
// env grant, for claude-desktop (whose entry reads the env file), with an
// env file that sets both names.
func setenvSpec(policy string) projectSpec {
	policy = strings.Replace(policy, "servers: attacker: {\n",
		"servers: attacker: {\n\tsetenv: {"+setenvName+": \""+setenvValue+"\"}\n\tenv: [\"OTHER_SETTING\"]\n", 1)
	return projectSpec{
		client:  "claude-desktop",
		envFile: "OTHER_SETTING=granted\n" + setenvName + "=from-the-env-file\n",
		policy:  [2]string{"mcpolicy.cue", policy},
	}
}

func setenvSteps() []step {
	return []step{may(setenvStep, `printf '%s' "$`+setenvName+`"`)}
}

// requireSetenv fails unless the server saw want as its setenv variable.
func (o outcome) requireSetenv(t *testing.T, backend, want string) {
	t.Helper()
	if r := o.results[setenvStep]; !r.ok || r.msg != want {
		t.Errorf("%s via %s: %s: %s, want %q\nstdout:\n%s\nstderr:\n%s", backend, o.how, setenvStep, r.describe(), want, o.stdout, lastLines([]byte(o.stderr), 10))
		return
	}
	t.Logf("%s: %s = %q", backend, setenvName, want)
}

func ptr[T any](v T) *T { return &v }
