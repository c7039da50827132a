package lint_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/project"
)

// pnpmStore is the package's folder in the workspace's .pnpm store, below
// shop/.
const pnpmStore = "node_modules/.pnpm/lodash@4.17.21/node_modules"

// pnpmShop lays out a pnpm monorepo, shop/, whose packages/checkout links
// lodash into the store at the workspace root (abs: an absolute link),
// writes servers (the body of a server "s") as the policy of the folder
// at (packages/checkout, or the workspace's own: "."), and lints it with rules: each finding as "RULE: message", with
// the shop's folder written $SHOP.
func pnpmShop(t *testing.T, abs bool, at, servers string, rules ...string) []string {
	t.Helper()
	base := t.TempDir()
	base, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	shop, home := filepath.Join(base, "shop"), filepath.Join(base, "home")
	checkout := filepath.Join(shop, "packages", "checkout")
	for _, d := range []string{home, filepath.Join(checkout, "node_modules"), filepath.Join(shop, pnpmStore, "lodash")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(shop, "package.json"):                      `{"private": true}`,
		filepath.Join(shop, "pnpm-workspace.yaml"):               "packages: [\"packages/*\"]\n",
		filepath.Join(shop, pnpmStore, "lodash", "index.js"):     "module.exports = {}\n",
		filepath.Join(checkout, "package.json"):                  `{"name": "checkout", "dependencies": {"lodash": "4.17.21"}}`,
		filepath.Join(shop, at, "mcpolicy.cue"):                  "version: \"v1\"\nservers: s: {\n\t" + strings.ReplaceAll(servers, "$SHOP", shop) + "\n}\n",
		filepath.Join(shop, "packages", "billing", "secret.txt"): "a sibling the checkout server has no business reading\n",
	}
	for p, body := range files {
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := "../../../" + pnpmStore + "/lodash"
	if abs {
		text = filepath.Join(shop, pnpmStore, "lodash")
	}
	if err := os.Symlink(text, filepath.Join(checkout, "node_modules", "lodash")); err != nil {
		t.Fatal(err)
	}
	proj, err := project.Discover(filepath.Join(shop, at))
	if err != nil {
		t.Fatal(err)
	}
	plans, err := proj.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range lint.Run(lint.PolicyTargets(plans, proj.Root, home), lint.Options{Only: rules}).Findings {
		got = append(got, f.Rule+": "+strings.ReplaceAll(f.Message, shop, "$SHOP"))
	}
	return got
}

// TestSymlinkFarm: packages/checkout's node_modules links lead to the
// workspace's store one folder above the policy's project; lint writes
// the exact read-only mount (source, target) that makes them resolve in
// the sandbox, and is quiet once it is there.
func TestSymlinkFarm(t *testing.T) {
	const (
		image   = `image: "x:1"` + "\n\t"
		project = `{source: ".", target: "/workspace"}`
		// The line lint writes: the store's lodash@4.17.21/node_modules
		// (lodash's own dependencies are beside it), at the path
		// ../../../ leads to from /workspace/node_modules: .. stops at /.
		line   = `{source: "$SHOP/` + pnpmStore + `", target: "/` + pnpmStore + `", mode: "ro"}`
		dangle = "SYMLINK_ESCAPE: 1 symlink(s) in /workspace resolve outside every grant and will dangle (e.g. node_modules/lodash -> $SHOP/" + pnpmStore + "/lodash); "
	)
	rules := []string{"SYMLINK_ESCAPE", "MOUNT_PARENT"}
	for _, c := range []struct {
		name, servers string
		abs           bool
		at            string // the policy's folder in the workspace; packages/checkout when empty
		want          []string
	}{
		{"the project alone", image + "mounts: [" + project + "]", false, "",
			[]string{dangle + "the read-only mount that makes them resolve is " + line + ", which adds a grant"}},
		{"with the line", image + "mounts: [" + project + ", " + line + "]", false, "", nil},
		{"bwrap and landlock", "command: [\"/usr/bin/node\", \"/workspace/index.js\"]\n\tmounts: [" + project + "]", false, "",
			[]string{dangle + "the read-only mount that makes them resolve is " + line + ", which adds a grant"}},
		{"bwrap and landlock with the line", "command: [\"/usr/bin/node\", \"/workspace/index.js\"]\n\tmounts: [" + project + ", " + line + "]", false, "", nil},
		{"landlock alone", "command: [\"/usr/bin/node\", \"/workspace/index.js\"]\n\tbackends: [\"landlock\"]\n\tmounts: [" + project + "]", false, "",
			[]string{dangle + `the read-only mount that makes them resolve is {source: "$SHOP/` + pnpmStore + `", target: "$SHOP/` + pnpmStore + `", mode: "ro"} (landlock shows host paths: the target is the host path itself), which adds a grant`}},
		// The store mounted, at a target the links do not lead to: they
		// dangle, and the finding says where it must stand.
		{"the store at the wrong target", image + `mounts: [` + project + `, {source: "$SHOP/node_modules/.pnpm", target: "/store"}]`, false, "",
			[]string{"SYMLINK_ESCAPE: 1 symlink(s) in /workspace dangle in the sandbox (e.g. node_modules/lodash -> ../../../" + pnpmStore + "/lodash, which is /" + pnpmStore + "/lodash there); " +
				`mount /store ($SHOP/node_modules/.pnpm) holds their targets, but they lead to /` + pnpmStore + `/lodash in the sandbox: give it target "/node_modules/.pnpm", or the read-only mount that makes them resolve is ` + line}},
		// On bwrap; landlock resolves them: the line is for bwrap.
		{"the store at the wrong target, bwrap and landlock", "command: [\"/usr/bin/node\", \"/workspace/index.js\"]\n\tmounts: [" + project + `, {source: "$SHOP/node_modules/.pnpm", target: "/store"}]`, false, "",
			[]string{"SYMLINK_ESCAPE: 1 symlink(s) in /workspace dangle in the sandbox (e.g. node_modules/lodash -> ../../../" + pnpmStore + "/lodash, which is /" + pnpmStore + "/lodash there); " +
				`mount /store ($SHOP/node_modules/.pnpm) holds their targets, but they lead to /` + pnpmStore + `/lodash in the sandbox: give it target "/node_modules/.pnpm", or the read-only mount that makes them resolve is ` + line + ` (landlock shows host paths: the links resolve there already)`}},
		{"the store moved where they lead", image + `mounts: [` + project + `, {source: "$SHOP/node_modules/.pnpm", target: "/node_modules/.pnpm"}]`, false, "", nil},
		// Landlock shows the store at its host path: any target does.
		{"the store elsewhere on landlock", "command: [\"/usr/bin/node\", \"/workspace/index.js\"]\n\tbackends: [\"landlock\"]\n\tmounts: [" + project + `, {source: "$SHOP/node_modules/.pnpm", target: "/store"}]`, false, "", nil},
		{"absolute link", image + "mounts: [" + project + "]", true, "",
			[]string{dangle + `the read-only mount that makes them resolve is {source: "$SHOP/` + pnpmStore + `", target: "$SHOP/` + pnpmStore + `", mode: "ro"} (absolute links: the target is the host path itself), which adds a grant`}},
		{"absolute link with the line", image + `mounts: [` + project + `, {source: "$SHOP/` + pnpmStore + `", target: "$SHOP/` + pnpmStore + `"}]`, true, "", nil},
		// The tempting fix: the workspace's root mounted where the
		// project was. The links resolve; the siblings come along.
		{"the parent mount", image + `mounts: [{source: "$SHOP", target: "/workspace"}]`, false, "",
			[]string{"MOUNT_PARENT: mount /workspace moved up: ${PROJECT_ROOT} -> $SHOP (a parent holds more): above the project folder $SHOP/packages/checkout, it holds the store 1 of the project's symlink(s) lead to (e.g. node_modules/lodash -> ../../../" + pnpmStore + "/lodash) and all else beside them; " +
				`mount the two instead, where they are now: {source: ".", target: "/workspace/packages/checkout", mode: "ro"} and {source: "$SHOP/` + pnpmStore + `", target: "/workspace/` + pnpmStore + `", mode: "ro"}`}},
		{"the two mounts it proposes", image + `mounts: [{source: ".", target: "/workspace/packages/checkout", mode: "ro"}, {source: "$SHOP/` + pnpmStore + `", target: "/workspace/` + pnpmStore + `", mode: "ro"}]`, false, "", nil},
		// A parent the links do not need (the store is mounted on its
		// own) is MOUNT_PARENT's plain finding; the links resolve.
		{"a parent the links do not need", image + `mounts: [{source: "$SHOP/packages", target: "/p"}, {source: "$SHOP/node_modules", target: "/node_modules"}]`, false, "",
			[]string{"MOUNT_PARENT: mounts $SHOP/packages (ro), a parent of the project folder $SHOP/packages/checkout"}},
		// The workspace's own policy mounting its root: nothing.
		{"the monorepo's own root", image + `mounts: [{source: ".", target: "/workspace"}]`, false, ".", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			at := c.at
			if at == "" {
				at = "packages/checkout"
			}
			got := pnpmShop(t, c.abs, at, c.servers, rules...)
			if !slices.Equal(got, c.want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// plantedLinks lints a project whose folder holds links (name -> target,
// "$HOME" and "$BASE" expanded), as a server with a read-write grant could
// plant them; it returns SYMLINK_ESCAPE's messages, the base written $BASE.
func plantedLinks(t *testing.T, links map[string]string, dirs ...string) []string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	proj, home := filepath.Join(base, "proj"), filepath.Join(base, "home")
	for _, d := range append([]string{proj, filepath.Join(home, ".ssh")}, dirs...) {
		if err := os.MkdirAll(strings.ReplaceAll(d, "$BASE", base), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, "mcpolicy.cue"), []byte("version: \"v1\"\nservers: s: {\n\timage: \"x:1\"\n\tmounts: [{source: \".\", target: \"/workspace\", mode: \"rw\"}]\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		target = strings.NewReplacer("$HOME", home, "$BASE", base).Replace(target)
		if err := os.Symlink(target, filepath.Join(proj, name)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := project.Discover(proj)
	if err != nil {
		t.Fatal(err)
	}
	plans, err := p.Compile(home)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range lint.Run(lint.PolicyTargets(plans, p.Root, home), lint.Options{Only: []string{"SYMLINK_ESCAPE"}}).Findings {
		got = append(got, strings.ReplaceAll(f.Message, base, "$BASE"))
	}
	return got
}

// TestSymlinkLineNeverWide (#42, red team): links the server plants in
// its read-write project lead to the home, or to two far-apart folders
// whose common parent is /: lint says they dangle, and writes no mount
// line for the home, a folder holding it, or /; a link into a folder
// beside the home still gets its line.
func TestSymlinkLineNeverWide(t *testing.T) {
	for _, c := range []struct {
		name  string
		links map[string]string
		dirs  []string
		line  string // the mount line that must be written, or "" for none
	}{
		{"the home", map[string]string{"h": "$HOME"}, nil, ""},
		{"inside the home and beside it", map[string]string{"a": "$HOME/.ssh", "b": "$BASE/store/x"}, []string{"$BASE/store/x"}, ""},
		{"far apart", map[string]string{"a": "/usr", "b": "$BASE/store/x"}, []string{"$BASE/store/x"}, ""},
		{"the root", map[string]string{"r": "/"}, nil, ""},
		{"a credential store", map[string]string{"k": "$HOME/.ssh"}, nil, ""},
		{"a folder holding one", map[string]string{"k": "$HOME/.config"}, []string{"$BASE/home/.config/gh"}, ""},
		{"a store", map[string]string{"a": "$BASE/store/x"}, []string{"$BASE/store/x"}, `{source: "$BASE/store/x", target: "$BASE/store/x", mode: "ro"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := plantedLinks(t, c.links, c.dirs...)
			if len(got) != 1 {
				t.Fatalf("findings %q, want one SYMLINK_ESCAPE", got)
			}
			for _, wide := range []string{`source: "~/.`, `source: "$BASE/home"`, `source: "/"`, `source: "$BASE"`, `source: "/usr"`} {
				if strings.Contains(got[0], wide) {
					t.Errorf("the finding suggests a wide mount (%s):\n%s", wide, got[0])
				}
			}
			if c.line != "" && !strings.Contains(got[0], c.line) {
				t.Errorf("the finding lacks %s:\n%s", c.line, got[0])
			}
		})
	}
}

// TestSymlinkLineIsData (#42, red team): a store folder whose name holds
// quotes, a backslash, CUE's interpolation, a newline and ${...}: the
// line lint writes is one CUE value whose source is that folder.
func TestSymlinkLineIsData(t *testing.T) {
	odd := "$BASE/st\"o\\(re)\n${HOME}\u00e9\x01\x7f"
	got := plantedLinks(t, map[string]string{"a": odd}, odd)
	if len(got) != 1 {
		t.Fatalf("findings %q, want one SYMLINK_ESCAPE", got)
	}
	start := strings.Index(got[0], "{source: ")
	end := strings.Index(got[0], `mode: "ro"}`)
	if start < 0 || end < 0 {
		t.Fatalf("no mount line in %s", got[0])
	}
	line := got[0][start : end+len(`mode: "ro"}`)]
	v := cuecontext.New().CompileString(line)
	src, err := v.LookupPath(cue.ParsePath("source")).String()
	if err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	if src != odd {
		t.Errorf("the line's source is %q, want %q (line %s)", src, odd, line)
	}
}
