package project

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
)

// AtRef materialises the policies of the project at dir as they were at a
// git ref, in a temporary folder, so the old side of a diff compiles like
// the new one. Policies are found by name at the ref, so a policy file
// that was moved or renamed since is still found. cleanup removes the
// folder; display maps its paths back to "REF:path" for messages.
func AtRef(dir, ref string) (proj *Project, display func(string) string, cleanup func(), err error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		abs = filepath.Dir(abs)
	}
	top, err := git(abs, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s is not in a git repository: %v", dir, err)
	}
	if _, err := git(abs, "rev-parse", "--verify", "--quiet", ref+"^{commit}"); err != nil {
		return nil, nil, nil, fmt.Errorf("git ref %q is not in this clone; in a shallow CI clone fetch more history (git fetch --deepen=1, or actions/checkout with fetch-depth: 0)", ref)
	}
	realTop, _ := filepath.EvalSymlinks(top)
	realAbs, _ := filepath.EvalSymlinks(abs)
	rel, err := filepath.Rel(realTop, realAbs)
	if err != nil {
		return nil, nil, nil, err
	}
	rel = filepath.ToSlash(rel)
	list, err := git(abs, "ls-tree", "-r", "--name-only", ref, "--", filepath.Join(realTop, rel))
	if err != nil {
		return nil, nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "mcpolicy-at-ref-")
	if err != nil {
		return nil, nil, nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	root := filepath.Join(tmp, filepath.FromSlash(rel))
	if err := os.MkdirAll(root, 0o755); err != nil {
		cleanup()
		return nil, nil, nil, err
	}
	for _, name := range strings.Split(strings.TrimSpace(list), "\n") {
		inProject := strings.TrimPrefix(strings.TrimPrefix(name, rel), "/")
		if rel == "." {
			inProject = name
		}
		if !wanted(inProject) {
			continue
		}
		content, err := gitRaw(abs, "show", ref+":"+name)
		if err != nil {
			cleanup()
			return nil, nil, nil, err
		}
		target := filepath.Join(tmp, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(target), 0o755)
		if err := os.WriteFile(target, []byte(content), 0o644); err != nil {
			cleanup()
			return nil, nil, nil, err
		}
	}
	display = func(p string) string {
		if r, ok := strings.CutPrefix(p, tmp+string(filepath.Separator)); ok {
			return ref + ":" + filepath.ToSlash(r)
		}
		return p
	}
	proj, err = Discover(root)
	if err != nil {
		proj = &Project{Root: root} // no policy at the ref: every server is new
	}
	return proj, display, cleanup, nil
}

// wanted: the project's policy files, the Jsonnet they may import and
// the pins beside them (mcpolicy.pins/SERVER.json: part of the policy).
func wanted(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	if ext == ".libsonnet" || ext == ".jsonnet" {
		return true
	}
	if dir := path.Dir(name); ext == ".json" && path.Base(dir) == compiler.PinDir && (dir == compiler.PinDir || path.Dir(dir) == PolicyDir) {
		return true
	}
	if !isPolicyFile(name) {
		return false
	}
	return !strings.Contains(name, "/") && strings.HasPrefix(name, "mcpolicy.") ||
		path.Dir(name) == PolicyDir
}

func git(dir string, args ...string) (string, error) {
	out, err := gitRaw(dir, args...)
	return strings.TrimSpace(out), err
}

// gitRaw keeps the output as it is: a file's content, to the byte.
func gitRaw(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
