package escape_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/runtime/launch"
)

// The env file scenarios: a client that passes no environment of its own
// (Claude Desktop) gets an entry with --env-file, and the launcher reads the
// values of the plan's env grants from the user's file at spawn. The file
// holds every server's secrets: the server must neither read it, nor write
// it, nor make the next launch read a file it wrote.
//
// Each scenario's project grants one variable (envGranted) and plants the
// user's env file ($HOME/.config/mcpolicy/env, mode 600) holding it and
// another server's secret (envOther); the entry is claude-desktop's, in the
// planted home. Their weakened wirings are bwrap without the launcher with
// a naive loader in front: it reads the file as named (following symlinks,
// no check of where it lies or of its links) and passes the values into
// the sandbox, or binds the file's folder in.
var envFileScenarios = []scenario{
	{
		// The server reads what the file holds: only the granted value may
		// reach it, and the file itself must be out of its sight.
		name: "env-file-read", spec: envFileSpec, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			steps := envFileReadSteps(sb, true)
			o := sb.launchEntry(t, steps...)
			o.requireDenied(t, sb.backend)
			o.requireGranted(t, sb.backend)
			o.requireNotShown(t, sb.backend, envOther.value)
			o.requireNotShown(t, sb.backend, envGranted.value)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The wrapper passes the whole file on, and the file's folder
			// is bound in read-only.
			dir := filepath.Dir(sb.envFilePath())
			extra := append([]string{"--ro-bind", dir, dir}, naiveEnv(t, sb.envFilePath(), nil)...)
			steps := envFileReadSteps(sb, false)
			o := sb.launchWeakBwrapWith(t, extra, launchOpts{}, steps...)
			o.requireSucceeded(t, sb.backend, names(steps[:4])...)
			if !strings.Contains(o.stdout, envOther.value) {
				t.Errorf("weakened bwrap: reading the env file did not show %s's value: the suite cannot see the file read", envOther.name)
			}
		},
	},
	{
		// The server writes, in its read-write grant, what it would like
		// the next launch to read: an env file, the file the default path
		// would name were $XDG_CONFIG_HOME inside the grant, a symlink, a
		// hard link; and tries to plant them at the user's env file. The
		// next launch through the unchanged entry must get the user's
		// value. Then, out of band, every way the entry's file could
		// become the planted one (the user's file or its folder a symlink
		// into the grant, a hard link to the planted file, an entry or an
		// $XDG_CONFIG_HOME naming the grant) must be refused.
		name: "env-file-plant", spec: envFileSpec, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			steps := envFilePlantSteps(sb, true)
			o := sb.launchEntry(t, steps...)
			o.requireDenied(t, sb.backend)
			o.requireSucceededSteps(t, sb.backend, "the plant", names(steps[:4])...)
			sb.requireUnchanged(t, before)

			o = sb.launchEntry(t, nextLaunchSteps()...)
			o.requireDenied(t, sb.backend)
			o.requireGranted(t, sb.backend)
			sb.requireUnchanged(t, before)

			for _, a := range envFileAliases {
				undo := a.apply(t, sb)
				args := sb.entry.Args
				if a.entryArgs != nil {
					args = a.entryArgs(sb)
				}
				o := sb.launch(t, "entry ("+a.name+")", sb.entry.Command, args, sb.entry.Env, nextLaunchSteps())
				t.Logf("%s: %s", sb.backend, a.name)
				o.requireRefused(t, sb.backend)
				o.requireNotShown(t, sb.backend, envPlanted)
				undo()
			}
			sb.requireUnchanged(t, before)

			// `mcpolicy client` writes no entry whose file lies in the grant.
			entryBefore, err := os.ReadFile(sb.entryFile())
			must(t, err)
			planted := filepath.Join(sb.root, sb.ranDir, "planted-env")
			for _, c := range []struct {
				what string
				env  []string
				args []string
			}{
				{"--env-file naming the planted file", nil, []string{"--env-file", planted}},
				{"$XDG_CONFIG_HOME inside the grant", []string{"XDG_CONFIG_HOME=" + filepath.Join(sb.root, sb.ranDir, "xdg")}, nil},
			} {
				args := append([]string{"client", sb.client, "--backend", sb.backend, "--write", "-p", sb.root}, c.args...)
				code, out := sb.mcpolicyTry(t, c.env, args...)
				if code == 0 {
					t.Errorf("%s: mcpolicy client with %s: exit 0, want a refusal:\n%s", sb.backend, c.what, out)
				} else {
					t.Logf("%s: mcpolicy client with %s: exit %d: %s", sb.backend, c.what, code, lastLines([]byte(out), 1))
				}
				if b, err := os.ReadFile(sb.entryFile()); err != nil || string(b) != string(entryBefore) {
					t.Errorf("%s: mcpolicy client with %s changed the entry (%v)", sb.backend, c.what, err)
				}
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			steps := envFilePlantSteps(sb, false)
			sb.launchWeakBwrap(t, steps...).requireSucceeded(t, sb.backend, names(steps[:4])...)
			// The naive loader reads the file the entry names, whatever
			// it is: each alias hands the planted value to the next launch.
			for _, a := range envFileAliases {
				undo := a.apply(t, sb)
				file := sb.envFilePath()
				if a.entryArgs != nil {
					file = envFileArg(t, a.entryArgs(sb))
				}
				next := []step{may("the planted value reached the next launch", helperSh("environ", envGranted.name, envPlanted))}
				o := sb.launchWeakBwrapWith(t, naiveEnv(t, file, []string{envGranted.name}), launchOpts{}, next...)
				t.Logf("weakened bwrap: %s", a.name)
				o.requireSucceeded(t, sb.backend, names(next)...)
				undo()
			}
		},
	},
	{
		// The user names the project through a symlink (a symlinked
		// ~/code, macOS's /var and /tmp) and the env file by its real
		// path, which lies in the read-write grant: `mcpolicy client` must
		// not write that entry, or the launcher must refuse it (exit 8),
		// as docs/clients.md says of a file inside a mount source or the
		// project. Else the server reads every secret in the file and
		// writes the values of its next launch.
		name: "env-file-alias", spec: envFileSpec, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			file := sb.aliasEnvFile(t)
			alias := filepath.Join(sb.dir, "alias")
			must(t, os.Symlink(sb.root, alias))
			code, out := sb.mcpolicyTry(t, nil, "client", sb.client, "--backend", sb.backend, "--write", "-p", alias, "--env-file", file)
			if code != 0 {
				t.Logf("%s: mcpolicy client -p %s --env-file %s: refused: exit %d: %s", sb.backend, alias, file, code, lastLines([]byte(out), 1))
				return
			}
			t.Logf("%s: mcpolicy client -p %s --env-file %s wrote the entry: %s", sb.backend, alias, file, lastLines([]byte(out), 1))
			sb.entry = sb.readEntry(t)
			t.Logf("%s entry: %s %s", sb.backend, sb.entry.Command, shellQuote(sb.entry.Args))
			if sb.backend == "landlock" {
				// The Landlock launcher's view holds the project by the
				// name the entry gives it.
				sb.cwd = alias
			}
			o := sb.launchEntry(t, envFileAliasSteps(sb)...)
			o.requireRefused(t, sb.backend)
			if !o.ran {
				return
			}
			next := may("the value the server wrote reached the next launch", helperSh("environ", envGranted.name, envPlanted))
			switch o := sb.launchEntry(t, next); {
			case o.results[next.name].ok:
				t.Errorf("%s: the next launch through the same entry gave the server %s=%s, the value it wrote", sb.backend, envGranted.name, envPlanted)
			default:
				t.Logf("%s: the next launch: exit %d, %s: %s", sb.backend, o.code, next.name, o.results[next.name].describe())
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The naive loader reads the file wherever it lies.
			file := sb.aliasEnvFile(t)
			steps := envFileAliasSteps(sb)
			o := sb.launchWeakBwrapWith(t, naiveEnv(t, file, []string{envGranted.name}), launchOpts{}, steps...)
			o.requireSucceeded(t, sb.backend, names(steps)...)
			if !strings.Contains(o.stdout, envOther.value) {
				t.Errorf("weakened bwrap: reading the env file did not show %s's value", envOther.name)
			}
		},
	},
	{
		// The env file under a system folder the sandbox reads (/usr: the
		// bwrap argv binds it, the Landlock ruleset's baseline allows
		// it): the launcher must refuse it as it refuses one inside a
		// mount, or the server reads every secret in it. Not for docker
		// and podman: the host's /usr is not in the container.
		name: "env-file-system", spec: envFileSpec, backends: []string{"bwrap", "landlock"}, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			file := plantSystemEnvFile(t, sb)
			code, out := sb.mcpolicyTry(t, nil, "client", sb.client, "--backend", sb.backend, "--write", "-p", sb.root, "--env-file", file)
			if code != 0 {
				t.Logf("%s: mcpolicy client --env-file %s: refused: exit %d: %s", sb.backend, file, code, lastLines([]byte(out), 1))
				return
			}
			sb.entry = sb.readEntry(t)
			o := sb.launchEntry(t, mustNotLeak("read the env file under /usr", "cat "+shq(file)))
			o.requireRefused(t, sb.backend)
			o.requireNotShown(t, sb.backend, envOther.value)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The naive loader takes the file under /usr; /usr is bound.
			file := plantSystemEnvFile(t, sb)
			steps := []step{may("read the env file under /usr", "cat "+shq(file))}
			o := sb.launchWeakBwrapWith(t, naiveEnv(t, file, []string{envGranted.name}), launchOpts{}, steps...)
			o.requireSucceeded(t, sb.backend, names(steps)...)
			if !strings.Contains(o.stdout, envOther.value) {
				t.Errorf("weakened bwrap: reading the env file under /usr did not show %s's value", envOther.name)
			}
		},
	},
	{
		// The server writes the user's env file itself, by its host path
		// and through /proc: the file must be unchanged, and the next
		// launch must get the user's value.
		name: "env-file-write", spec: envFileSpec, backends: allBackends, weakBackend: "bwrap",
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			steps := envFileWriteSteps(sb, true)
			sb.launchEntry(t, steps...).requireDenied(t, sb.backend)
			sb.requireUnchanged(t, before)
			o := sb.launchEntry(t, nextLaunchSteps()...)
			o.requireDenied(t, sb.backend)
			o.requireGranted(t, sb.backend)
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			// The file's folder bound in read-write.
			dir := filepath.Dir(sb.envFilePath())
			before := sb.snapshot(t)
			steps := envFileWriteSteps(sb, false)
			sb.launchWeakBwrapWith(t, []string{"--bind", dir, dir}, launchOpts{}, steps...).requireSucceeded(t, sb.backend, names(steps[:2])...)
			sb.requireChanged(t, before)
			next := []step{may("the value the server wrote reached the next launch", helperSh("environ", envGranted.name, envPlanted))}
			sb.launchWeakBwrapWith(t, naiveEnv(t, sb.envFilePath(), []string{envGranted.name}), launchOpts{}, next...).requireSucceeded(t, sb.backend, names(next)...)
		},
	},
}

type envVar struct{ name, value string }

var (
	// envGranted is the plan's env grant, and its value in the user's file.
	envGranted = envVar{"MCPOLICY_ESCAPE_TOKEN", "granted-escape-value-7f3a"}
	// envOther is another server's secret in the same file: not granted.
	envOther = envVar{"OTHER_SERVER_TOKEN", "other-server-secret-91c2"}
)

// envPlanted is the value the attacker wants the next launch to get.
const envPlanted = "attacker-chosen-value-5e1d"

// envFileSpec is the env file scenarios' project: the grant, the user's
// file, Claude Desktop's entry (--env-file), the helper.
var envFileSpec = projectSpec{
	helper: true,
	env:    []string{envGranted.name},
	client: "claude-desktop",
	envFile: "# the user's env file: every server's secrets\n" +
		envGranted.name + "=" + envGranted.value + "\n" +
		"export " + envOther.name + "=\"" + envOther.value + "\"\n",
}

// requireGranted fails unless the granted value reached the server (the
// step nextLaunchSteps and envFileReadSteps begin with): without it, the
// denials prove nothing about a launch that reads the file.
func (o outcome) requireGranted(t *testing.T, backend string) {
	t.Helper()
	name := grantedStep
	if r := o.results[name]; !r.ok {
		t.Errorf("%s via %s: %s: %s; the launch did not pass the env file's value on, so the rest proves nothing\nstderr:\n%s", backend, o.how, name, r.describe(), lastLines([]byte(o.stderr), 10))
		return
	}
	t.Logf("%s: %s: ok", backend, name)
}

// requireSucceededSteps is requireSucceeded for the steps of a real launch
// that set up what follows.
func (o outcome) requireSucceededSteps(t *testing.T, backend, what string, names ...string) {
	t.Helper()
	for _, n := range names {
		if r := o.results[n]; !r.ok {
			t.Errorf("%s: %s: %s: %s; what follows needs it", backend, what, n, r.describe())
		}
	}
}

const grantedStep = "the granted value reached the server"

// nextLaunchSteps check that the value from the user's file reached the
// server, and that the planted one did not.
func nextLaunchSteps() []step {
	return []step{
		may(grantedStep, helperSh("environ", envGranted.name, envGranted.value)),
		denyWith("the planted value reached the server", helperSh("environ", envGranted.name, envPlanted), "ENOENT"),
	}
}

// openFdSearch looks for path among every readable /proc/PID/fd link
// (busybox ls -l shows each link's target).
func openFdSearch(path string) string {
	return `case "$(ls -l /proc/[0-9]*/fd/ 2>/dev/null)" in *` + shq(path) + `*) echo "open in a /proc/PID/fd"; exit 0;; esac; echo "errno=ENOENT not open in any readable /proc/PID/fd"; exit 1`
}

func envFileReadSteps(sb *sandbox, confined bool) []step {
	p := sb.envFilePath()
	denied := func(name, sh string, errnos ...string) step {
		if confined {
			return denyWith(name, sh, errnos...)
		}
		return may(name, sh)
	}
	return []step{
		may(grantedStep, helperSh("environ", envGranted.name, envGranted.value)),
		denied("find "+envOther.name+" (in the file, not granted) in any environ", helperSh("environ", envOther.name, envOther.value), "ENOENT"),
		denied("read the env file by its host path", "cat "+shq(p), "ENOENT", "EACCES"),
		denied("list the env file's folder", "ls -a "+shq(filepath.Dir(p)), "ENOENT", "EACCES"),
		denied("find the env file open in any /proc/PID/fd", openFdSearch(p), "ENOENT"),
	}
}

// envFilePlantSteps write, in the grant, the files the next launch should
// read, and try to plant them at the user's env file.
func envFilePlantSteps(sb *sandbox, confined bool) []step {
	p := sb.envFilePath()
	body := envGranted.name + "=" + envPlanted + "\n"
	denied := func(name, sh string) step {
		if confined {
			return denyWith(name, sh, "ENOENT", "EACCES", "EROFS")
		}
		return may(name, sh)
	}
	d := sb.ranDir
	return []step{
		may("write "+d+"/planted-env (mode 600)", "printf %s "+shq(body)+" > "+d+"/planted-env && chmod 600 "+d+"/planted-env"),
		may("write "+d+"/xdg/mcpolicy/env (the default path, were $XDG_CONFIG_HOME there)", "mkdir -p "+d+"/xdg/mcpolicy && printf %s "+shq(body)+" > "+d+"/xdg/mcpolicy/env && chmod 600 "+d+"/xdg/mcpolicy/env"),
		may("symlink "+d+"/env-link -> planted-env", "ln -s planted-env "+d+"/env-link"),
		may("hard link "+d+"/env-hard to planted-env", "ln "+d+"/planted-env "+d+"/env-hard"),
		denied("overwrite the user's env file by its host path", "printf %s "+shq(body)+" > "+shq(p)),
		denied("replace the user's env file by a symlink into the grant", "ln -sf \"$PWD/"+d+"/planted-env\" "+shq(p)),
		denied("hard link the planted file at the user's env file", "ln \""+d+"/planted-env\" "+shq(p)),
	}
}

func envFileWriteSteps(sb *sandbox, confined bool) []step {
	p := sb.envFilePath()
	body := envGranted.name + "=" + envPlanted + "\n"
	denied := func(name, sh string) step {
		if confined {
			return denyWith(name, sh, "ENOENT", "EACCES", "EROFS")
		}
		return may(name, sh)
	}
	// The append first: whatever works, the file ends as one overwrite.
	return []step{
		denied("append to the user's env file", "printf %s "+shq(body)+" >> "+shq(p)),
		denied("overwrite the user's env file by its host path", "printf %s "+shq(body)+" > "+shq(p)),
		denied("write it through /proc/1/root", "printf %s "+shq(body)+" > /proc/1/root"+shq(p)),
		denied("chmod it 666", "chmod 666 "+shq(p)),
	}
}

// An envFileAlias is a configuration of the user's that would make the
// entry's env file the one the server planted in its grant: apply sets it
// up on the host (after the plant), undo puts the user's file back.
type envFileAlias struct {
	name      string
	apply     func(t *testing.T, sb *sandbox) (undo func())
	entryArgs func(sb *sandbox) []string // the entry as edited, or nil
}

var envFileAliases = []envFileAlias{
	{
		name: "the user's env file is a symlink to the planted file",
		apply: func(t *testing.T, sb *sandbox) func() {
			return replaceEnvFile(t, sb, func(p string) error {
				return os.Symlink(filepath.Join(sb.root, sb.ranDir, "planted-env"), p)
			})
		},
	},
	{
		name: "the env file's folder is a symlink to the planted folder",
		apply: func(t *testing.T, sb *sandbox) func() {
			dir := filepath.Dir(sb.envFilePath())
			must(t, os.Rename(dir, dir+".user"))
			must(t, os.Symlink(filepath.Join(sb.root, sb.ranDir, "xdg", "mcpolicy"), dir))
			return func() { must(t, os.Remove(dir)); must(t, os.Rename(dir+".user", dir)) }
		},
	},
	{
		name: "the user's env file is a hard link to the planted file",
		apply: func(t *testing.T, sb *sandbox) func() {
			return replaceEnvFile(t, sb, func(p string) error {
				return os.Link(filepath.Join(sb.root, sb.ranDir, "planted-env"), p)
			})
		},
	},
	{
		name:  "the entry's --env-file names the planted file (edited by hand)",
		apply: func(t *testing.T, sb *sandbox) func() { return func() {} },
		entryArgs: func(sb *sandbox) []string {
			return withEnvFileArg(sb.entry.Args, filepath.Join(sb.root, sb.ranDir, "planted-env"))
		},
	},
}

// replaceEnvFile moves the user's env file aside and puts what mk makes
// at its path; undo puts it back.
func replaceEnvFile(t *testing.T, sb *sandbox, mk func(p string) error) func() {
	t.Helper()
	p := sb.envFilePath()
	must(t, os.Rename(p, p+".user"))
	must(t, mk(p))
	return func() { must(t, os.Remove(p)); must(t, os.Rename(p+".user", p)) }
}

// withEnvFileArg is args with --env-file's value replaced by file.
func withEnvFileArg(args []string, file string) []string {
	out := slices.Clone(args)
	if i := slices.Index(out, "--env-file"); i >= 0 && i+1 < len(out) {
		out[i+1] = file
	}
	return out
}

func envFileArg(t *testing.T, args []string) string {
	t.Helper()
	i := slices.Index(args, "--env-file")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("the entry has no --env-file: %q", args)
	}
	return args[i+1]
}

// naiveEnv is a naive loader's bwrap options: the file read as named
// (os.ReadFile follows symlinks; nothing checks where it lies, its links,
// owner or mode), and the values of names (every name when nil) set in the
// sandbox.
func naiveEnv(t *testing.T, file string, names []string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	must(t, err)
	vals, err := launch.ParseEnvFile(file, b)
	must(t, err)
	var out []string
	for n, v := range vals {
		if names == nil || slices.Contains(names, n) {
			out = append(out, "--setenv", n, v)
		}
	}
	return out
}

// aliasEnvFile writes the user's env file inside the read-write grant
// (mode 600, one link) and returns its real path.
func (sb *sandbox) aliasEnvFile(t *testing.T) string {
	t.Helper()
	file := filepath.Join(sb.root, sb.ranDir, "user-env")
	b, err := os.ReadFile(sb.envFilePath())
	must(t, err)
	must(t, os.WriteFile(file, b, 0o600))
	return file
}

// envFileAliasSteps read the env file in the grant and write the next
// launch's value into it.
func envFileAliasSteps(sb *sandbox) []step {
	f := sb.ranDir + "/user-env"
	return []step{
		mustNotLeak("read the env file in the grant ("+f+")", "cat "+f),
		deny("write the next launch's value into it", "printf %s "+shq(envGranted.name+"="+envPlanted+"\n")+" >> "+f),
		deny("replace it with a file of its own, mode 600", "rm -f "+f+" && printf %s "+shq(envGranted.name+"="+envPlanted+"\n")+" > "+f+" && chmod 600 "+f),
	}
}

// plantSystemEnvFile copies the user's env file (600, the test's user's)
// to a folder of its own under /usr/local/share, removed when the test
// ends: writing there needs root, so elsewhere it skips (CI fails).
func plantSystemEnvFile(t *testing.T, sb *sandbox) string {
	t.Helper()
	requireRoot(t)
	dir, err := os.MkdirTemp("/usr/local/share", "mcpolicy-escape-")
	if err != nil {
		t.Fatalf("a folder under /usr/local/share: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	b, err := os.ReadFile(sb.envFilePath())
	must(t, err)
	file := filepath.Join(dir, "env")
	must(t, os.WriteFile(file, b, 0o600))
	return file
}
