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
)

// hideScenarios (#42): the project is mounted read-only with its env files
// and its secrets folder hidden (mounts[].hide); only src/ is writable. The
// server, through the client entry, tries to read them and to take the
// masks away: each read fails with EACCES (the entry is there, masked by
// an empty folder or file of mode 0000 — one notch weaker than a path
// outside every mount, ENOENT), and neither secret reaches its output.
// The weakened wiring is the real launcher given the same artefact
// without its hidden paths (re-pinned): the launcher ignoring hide. The
// reads then succeed and show the secrets, so the steps can tell.
var hideScenarios = []scenario{
	{
		name: "hidden-paths", backends: allBackends, weakBackends: allBackends,
		spec:         projectSpec{policy: [2]string{"mcpolicy.cue", hideBindPolicy}, files: hideFiles},
		landlockSpec: &projectSpec{policy: [2]string{"mcpolicy.cue", hideLandlockPolicy}, files: hideFiles},
		real: func(t *testing.T, sb *sandbox) {
			before := sb.snapshot(t)
			o := sb.launchEntry(t, hideSteps(true)...)
			o.requireDenied(t, sb.backend)
			o.requireSucceededSteps(t, sb.backend, "the project beside them", hideBeside)
			o.requireNotShown(t, sb.backend, hiddenEnvSecret)
			o.requireNotShown(t, sb.backend, hiddenDirSecret)
			o.requireNotShown(t, sb.backend, "planted-env") // the harness's .env.local
			sb.requireUnchanged(t, before)
		},
		weak: func(t *testing.T, sb *sandbox) {
			steps := hideSteps(false)
			o := sb.launchWithoutHide(t, steps...)
			o.requireSucceeded(t, sb.backend, names(steps)...)
			for _, v := range []string{hiddenEnvSecret, hiddenDirSecret} {
				if !strings.Contains(o.stdout, v) {
					t.Errorf("weakened %s: the read did not show %q: the suite cannot see a hidden file read", sb.backend, v)
				}
			}
		},
	},
}

// hiddenWayScenarios (#42, red team): a folder on a hidden path's way
// (conf in "conf/*.pem") that the server renames takes the hidden file
// out of the pattern's reach: at its next start the launcher finds no
// conf, and conf.moved/a.pem is readable. The seed's read-write project
// hides conf/*.pem: conf is an entry of its fixed top level, a mount
// point (EBUSY), so the rename fails and the next start masks a.pem
// again; a policy whose folder could be renamed (src/conf below the top)
// is refused by build. The weakened wiring is the Landlock ruleset
// without its fixed top level: the rename succeeds and the next start
// reads the file under its new name.
var hiddenWayScenarios = []scenario{
	{
		name: "hidden-way-rename", backends: allBackends, weakBackend: "landlock",
		spec: projectSpec{helper: true, policy: [2]string{"mcpolicy.cue", hiddenWayPolicy()}, files: map[string]string{"conf/a.pem": hiddenWaySecret + "\n", "conf/keep.txt": "keep\n"}},
		real: func(t *testing.T, sb *sandbox) {
			o := sb.launchEntry(t,
				may("write beside the hidden file", "echo more >> conf/keep.txt"),
				deny(hiddenWayRename, "mv conf conf.moved"),
				denyWith("read the hidden file", "cat conf/a.pem", "EACCES"),
				denyWith("read it through ..", "cat conf/../conf/a.pem", "EACCES"),
				denyWith("read it through a symlink planted beside it", "ln -s a.pem conf/l && cat conf/l", "EACCES"),
				deny("give it a second name (hard link)", "ln conf/a.pem conf/b && cat conf/b"),
				deny("rename the hidden file", "mv conf/a.pem conf/a.txt"),
				deny("remove the hidden file", "rm -f conf/a.pem"),
				// A descriptor of the launcher's (a source opened for
				// its bind) left open would resolve below the mask.
				mustNotLeak("read the hidden file through an inherited descriptor",
					`i=3; while [ $i -lt 256 ]; do ./`+helperName+` openat $i conf/a.pem && exit 0; ./`+helperName+` openat $i a.pem && exit 0; i=$((i+1)); done 2>/dev/null; exit 1`))
			o.requireDenied(t, sb.backend)
			o.requireNotShown(t, sb.backend, hiddenWaySecret)
			o = sb.launchEntry(t,
				denyWith("read the hidden file at the next start", "cat conf/a.pem", "EACCES"),
				denyWith("read it under the new name", "cat conf.moved/a.pem", "ENOENT"))
			o.requireDenied(t, sb.backend)
			o.requireNotShown(t, sb.backend, hiddenWaySecret)
			if sb.backend != "bwrap" {
				return // build is the same for every backend
			}
			below := strings.Replace(hiddenWayPolicy(), `"conf/*.pem"`, `"src/conf/*.pem"`, 1)
			p := sb.s.sandbox(t, sb.backend, projectSpec{policy: [2]string{"mcpolicy.cue", below}, noBuild: true})
			code, out := p.mcpolicyTry(t, nil, "build", p.root)
			if code == 0 || !strings.Contains(out, `hidden path "src/conf/*.pem": a server that can write /workspace can rename /workspace/src/conf`) {
				t.Errorf("build of a hide whose folder the server can rename: exit %d, want the refusal:\n%s", code, out)
			}
		},
		weak: func(t *testing.T, sb *sandbox) {
			unfixTop(t, filepath.Join(sb.root, ".mcpolicy", "landlock", "attacker.json"))
			sb.launchWeakLandlock(t, may(hiddenWayRename, "mv conf conf.moved")).requireSucceeded(t, sb.backend, hiddenWayRename)
			o := sb.launchWeakLandlock(t, may("read it under the new name", "cat conf.moved/a.pem"))
			if !strings.Contains(o.stdout, hiddenWaySecret) {
				t.Errorf("weakened %s: the next start did not read the moved file: the suite cannot see the rename attack\nstdout:\n%s\nstderr:\n%s", sb.backend, o.stdout, lastLines([]byte(o.stderr), 15))
			}
		},
	},
}

const (
	hiddenWaySecret = "HIDDEN-WAY-52af"
	hiddenWayRename = "rename the folder on the hidden path's way"
)

// hiddenWayPolicy is the seed's policy hiding conf/*.pem too.
func hiddenWayPolicy() string {
	p := seedPolicy()
	if !strings.Contains(p, `hide: [".env*"]`) {
		panic("examples/seed/mcpolicy.cue changed: no hide of .env*")
	}
	return strings.Replace(p, `hide: [".env*"]`, `hide: [".env*", "conf/*.pem"]`, 1)
}

const (
	hiddenEnvSecret = "HIDDEN-ENV-4d1c"
	hiddenDirSecret = "HIDDEN-DIR-9b7e"
	hideBeside      = "read the project beside them"
)

var hideFiles = map[string]string{
	".env":          "API_KEY=" + hiddenEnvSecret + "\n",
	"secrets/token": hiddenDirSecret + "\n",
}

// hideBindPolicy is the bind backends' project: read-only with .env* and
// secrets hidden, src/ read-write (where the payload leaves its mark).
const hideBindPolicy = `version: "v1"
servers: attacker: {
	command: ["/bin/sh", "/workspace/attack.sh"]
	image:   %q
	mounts: [
		{source: ".", target: "/workspace", hide: [".env*", "secrets"]},
		{source: "src", target: "/workspace/src", mode: "rw"},
	]
	backends: ["bwrap", "docker"]
}
`

// hideLandlockPolicy is landlockPolicy with the same paths hidden.
var hideLandlockPolicy = strings.Replace(landlockPolicy, `{source: ".", target: "/workspace", mode: "ro"}`,
	`{source: ".", target: "/workspace", mode: "ro", hide: [".env*", "secrets"]}`, 1)

// hideSteps read the hidden paths and try to take their masks away;
// masked is false for the weakened wiring, where they are plain files.
func hideSteps(masked bool) []step {
	read := func(name, sh string) step {
		if masked {
			return denyWith(name, sh, "EACCES")
		}
		return may(name, sh)
	}
	steps := []step{
		read("read the hidden .env", "cat .env"),
		read("read the hidden .env.local", "cat .env.local"),
		read("list the hidden secrets folder", "ls secrets"),
		read("read a file in the hidden secrets folder", "cat secrets/token"),
	}
	if masked {
		steps = append(steps,
			deny("make the masked .env readable", "chmod 644 .env && cat .env"),
			deny("make the masked secrets folder readable", "chmod 755 secrets && cat secrets/token"),
			deny("unmount the mask, then read", "umount .env 2>/dev/null; umount secrets 2>/dev/null; cat .env"),
			may(hideBeside, "cat README.md"),
		)
	}
	return steps
}

// launchWithoutHide launches the entry with its artefact rewritten
// without the hidden paths (the bwrap spec's and the engine argv's
// --mcpolicy-hide, the ruleset's "hidden") and its digest pinned again:
// the launcher as it was before it knew hide.
func (sb *sandbox) launchWithoutHide(t *testing.T, steps ...step) outcome {
	t.Helper()
	art := sb.entryArtefact()
	if art == "" {
		t.Fatalf("%s: the entry reads no artefact under .mcpolicy: %s %q", sb.backend, sb.entry.Command, sb.entry.Args)
	}
	b, err := os.ReadFile(art)
	must(t, err)
	var obj map[string]any
	var list []any
	switch {
	case json.Unmarshal(b, &list) == nil:
		list = dropHide(list)
		b, err = json.MarshalIndent(list, "", "  ")
	case json.Unmarshal(b, &obj) == nil:
		if args, ok := obj["args"].([]any); ok {
			obj["args"] = dropHide(args)
		}
		delete(obj, "hidden")
		b, err = json.MarshalIndent(obj, "", "  ")
	default:
		t.Fatalf("%s: %s is neither a JSON argv nor an object", sb.backend, art)
	}
	must(t, err)
	if strings.Contains(string(b), "mcpolicy-hide") || strings.Contains(string(b), `"hidden"`) {
		t.Fatalf("%s: the weakened artefact still hides paths", sb.backend)
	}
	weak := strings.TrimSuffix(art, ".json") + ".nohide.json"
	must(t, os.WriteFile(weak, b, 0o644))
	t.Cleanup(func() { os.Remove(weak) })
	sum := sha256.Sum256(b)
	args := slices.Clone(sb.entry.Args)
	for i := range args {
		if i > 0 && args[i-1] == "--sha256" {
			args[i] = "sha256:" + hex.EncodeToString(sum[:])
		}
		if sb.expand(args[i]) == art {
			args[i] = weak
		}
	}
	// An engine entry holds the argv too, after "--": the launcher checks
	// it against the artefact's.
	if at := slices.Index(args, "--"); at >= 0 {
		var rest []any
		for _, a := range args[at+1:] {
			rest = append(rest, a)
		}
		args = args[:at+1]
		for _, a := range dropHide(rest) {
			args = append(args, a.(string))
		}
	}
	if slices.Equal(args, sb.entry.Args) {
		t.Fatalf("%s: the entry's args name no artefact to replace: %q", sb.backend, sb.entry.Args)
	}
	t.Logf("weakened %s: %s without its hidden paths (%s)", sb.backend, filepath.Base(art), filepath.Base(weak))
	return sb.launch(t, "entry with the hidden paths stripped from its artefact (launcher ignoring hide)", sb.entry.Command, args, sb.entry.Env, steps)
}

// dropHide removes each "--mcpolicy-hide" and its operands from an argv:
// three in a bwrap spec (source, target, pattern), one in an engine's.
func dropHide(argv []any) []any {
	var out []any
	for i := 0; i < len(argv); i++ {
		if argv[i] == "--mcpolicy-hide" {
			n := 1
			if i+3 < len(argv) {
				if s, ok := argv[i+1].(string); ok && !strings.Contains(s, "source=") {
					n = 3
				}
			}
			i += n
			continue
		}
		out = append(out, argv[i])
	}
	return out
}
