package clientcfg

import (
	"path/filepath"
	"slices"

	"github.com/mcpolicy/mcpolicy/compiler/readback"
	"github.com/mcpolicy/mcpolicy/internal/hostfile"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// Launch is one entry of a client config with what it runs, for `mcpolicy
// import`, which turns it into a policy: the same read as lint's (Target),
// plus the words and values lint only judges.
type Launch struct {
	// Target is lint's reading: the plan of a container entry, the flags
	// (secrets inline, unconfined...), Remote, Launcher, ProjectRoot.
	Target *readback.Target
	// Argv is the command the entry runs and its arguments, past the
	// wrappers it was read through (sh -c, env NAME=value, cmd /c...);
	// empty for a remote server.
	Argv []Word
	// Env are the variables the entry sets: its env object's, an env
	// wrapper's NAME=value, Codex's env_vars (no value).
	Env []EnvSetting
	// ClientSandbox is set when a client's own sandbox wraps the command
	// (srt, VS Code's sandboxEnabled).
	ClientSandbox bool
	paths         paths
}

// Word is one word of a command as written, and where.
type Word struct {
	S   string
	Pos position.Pos
}

// EnvSetting is one variable an entry sets.
type EnvSetting struct {
	Name, Value string
	HasValue    bool // Codex's env_vars forward a name with no value
	// Reference: the value only names a variable the client fills in
	// (${GITHUB_TOKEN}), or is empty.
	Reference bool
	// Secret: the value is a secret written inline (secrets.go), or one
	// the name says is secret: it never goes into a policy.
	Secret bool
	Pos    position.Pos
}

// File is the path on this machine of a path written in the entry (relative
// to its cwd, else its project, else the config's folder; ~, $HOME,
// ${workspaceFolder} placed), "" when it cannot be known.
func (l *Launch) File(raw string) string { return l.paths.file(raw) }

// Home is the home folder the entry's ~ stands for ("" when unknown).
func (l *Launch) Home() string { return filepath.FromSlash(l.paths.home) }

// ReadLaunches reads a client config strictly, as Read does, on this
// machine (o.ThisMachine is implied): the configs import reads are the
// user's own.
func ReadLaunches(file string, o Options) ([]*Launch, error) {
	src, err := hostfile.ReadRegular(file, hostfile.MaxConfig)
	if err != nil {
		return nil, err
	}
	var ls []*Launch
	_, err = parseRecording(file, src, o.Home, true, nil, func(e *entry) {
		e.t.OnThisMachine = !inCluster(e.t.Launcher)
		l := &Launch{Target: e.t, ClientSandbox: e.sandbox != nil, paths: e.paths}
		for _, a := range e.ran {
			l.Argv = append(l.Argv, Word{a.s, a.pos})
		}
		for _, k := range e.envKeys {
			s := EnvSetting{Name: k.name, Value: k.value, HasValue: k.hasValue, Pos: k.pos}
			s.Reference = !k.hasValue || isReference(k.value)
			s.Secret = k.hasValue && !s.Reference && (looksLikeSecret(k.name, k.value) || secretNamed(k.name))
			l.Env = append(l.Env, s)
		}
		ls = append(ls, l)
	})
	if err != nil {
		return nil, err
	}
	return ls, nil
}

// LooksLikeSecret reports whether name=value holds a secret inline, as
// lint judges it, or the name says it is one: what import keeps out of a
// policy.
func LooksLikeSecret(name, value string) bool {
	return !isReference(value) && (looksLikeSecret(name, value) || secretNamed(name))
}

// SecretInArgv reports whether lint flagged a secret written in one of
// the entry's command words (a token argument, --api-key X): such a
// command cannot be copied into a policy.
func (l *Launch) SecretInArgv() bool {
	for _, f := range l.Target.Flags {
		if f.Kind != readback.FlagSecretInline {
			continue
		}
		if slices.ContainsFunc(l.Argv, func(w Word) bool { return w.Pos == f.Pos }) {
			return true
		}
	}
	return false
}
