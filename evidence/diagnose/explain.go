package diagnose

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/evidence/why"
	"github.com/mcpolicy/mcpolicy/internal/printable"
	"github.com/mcpolicy/mcpolicy/runtime/launchlog"
)

// Context is what the explanations look at: the server's plan (and its
// project's, for why), the backend it failed on, this machine, and the
// read-write grants its user cannot write (project.UnwritableGrants: the
// source and the sentence that says the fix).
type Context struct {
	Plan       *compiler.Plan
	Plans      []*compiler.Plan
	Backend    string
	Machine    compiler.Machine
	Unwritable map[string]string
	// LookPath finds a program on this machine (nil: exec.LookPath).
	LookPath func(string) (string, error)
}

// sandboxPATH is the PATH the launchers give a server that is not granted
// one.
const sandboxPATH = "/usr/local/bin:/usr/bin:/bin"

// Explain names why a launch failed: the refusal its record holds, then
// the first stderr line (newest first) a rule explains; with none, what
// is known (the exit status, the last lines). rec may be nil (no record:
// the entry did not reach a launcher that logs).
func Explain(c *Context, rec *launchlog.Record, stderr []string) []Finding {
	var out []Finding
	if rec != nil && rec.Refused != "" {
		out = append(out, Finding{Rule: "refused", What: "the launcher refused to start it: " + printable.String(rec.Refused), Fix: printable.String(rec.Fix)})
	}
	lines := stderr
	if rec != nil && len(rec.Stderr) > 0 {
		lines = rec.Stderr
	}
	seen := map[string]bool{}
	for i := len(lines) - 1; i >= 0 && len(out) < 3; i-- {
		f, ok := c.explainLine(lines[i])
		if ok && !seen[f.What] {
			seen[f.What] = true
			// Names in them are the server's: shown escaped.
			f.What, f.Fix, f.Line = printable.String(f.What), printable.String(f.Fix), printable.String(lines[i])
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = append(out, unexplained(rec, lines))
	}
	return out
}

func (c *Context) explainLine(line string) (Finding, bool) {
	for _, r := range Rules {
		m := r.Pattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		m[0] = line
		if f, ok := r.Explain(c, m); ok {
			f.Rule = r.ID
			return f, true
		}
	}
	return Finding{}, false
}

// unexplained is what is known when no rule explains the failure.
func unexplained(rec *launchlog.Record, lines []string) Finding {
	f := Finding{Rule: "unexplained", What: "the server ended before it answered", Fix: "read its last stderr lines (below); run it with `mcpolicy exec -v` or `mcpolicy run` to watch it start"}
	switch {
	case rec == nil:
		f.What = "the server did not answer, and its launch left no record (an entry that does not start mcpolicy-launch, or the log could not be written)"
	case rec.Signal != "":
		f.What = fmt.Sprintf("the server was killed by %s before it answered", rec.Signal)
	case rec.Exit != nil:
		f.What = fmt.Sprintf("the server exited with status %d before it answered", *rec.Exit)
	case rec.Note != "":
		f.What = "the server did not answer; " + rec.Note
	}
	if len(lines) == 0 {
		f.Fix = "it wrote nothing on stderr: run it with `mcpolicy exec -v` or `mcpolicy run` to watch it start"
	}
	return f
}

// pathIn is the first absolute path a line names.
func pathIn(line string) string {
	m := pathPattern.FindStringSubmatch(line)
	if m == nil {
		return ""
	}
	return filepath.Clean(m[1])
}

// mountOf is the plan's mount whose target holds p (the deepest).
func (c *Context) mountOf(p string) *compiler.Mount {
	var best *compiler.Mount
	for i, mt := range c.Plan.Mounts {
		if within(p, mt.Target) && (best == nil || len(mt.Target) > len(best.Target)) {
			best = &c.Plan.Mounts[i]
		}
	}
	return best
}

func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// hostOf is where p lies on this machine when a mount holds it, else p.
func (c *Context) hostOf(p string) string {
	if mt := c.mountOf(p); mt != nil {
		return filepath.Join(c.Machine.Resolve(mt.Source), strings.TrimPrefix(p, mt.Target))
	}
	return p
}

// verdict is `mcpolicy why PATH`'s answer for the sandbox path p on the
// backend; nil when why cannot say.
func (c *Context) verdict(p string) *why.Verdict {
	m := why.Machine{Machine: c.Machine, FS: true}
	t, err := why.ParseTarget(p, c.Plans, m, why.SandboxPath)
	if err != nil {
		return nil
	}
	a, err := why.Ask([]*compiler.Plan{c.Plan}, t, m, c.Backend)
	if err != nil || len(a.Servers) == 0 || len(a.Servers[0].Backends) == 0 {
		return nil
	}
	return &a.Servers[0].Backends[0]
}

// hostPaths is the detail of why's stop saying the backend runs with
// host paths (Landlock), when p is named by its mount target there.
func hostPaths(v *why.Verdict) string {
	if v == nil {
		return ""
	}
	for _, s := range v.Stops {
		if s.Rule == stopHostPaths {
			return s.Detail
		}
	}
	return ""
}

// stopHostPaths is why's stop for a backend that does not remap paths.
const stopHostPaths = "host-paths"

// whySays is why's answer for p in one line ("" when why cannot say).
func (c *Context) whySays(p string) string {
	v := c.verdict(p)
	if v == nil {
		return ""
	}
	var parts []string
	if v.Reachable {
		acc := make([]string, len(v.Access))
		for i, x := range v.Access {
			acc[i] = string(x)
		}
		parts = append(parts, "reachable ("+strings.Join(acc, ", ")+")")
	} else {
		parts = append(parts, "not reachable")
	}
	for _, s := range v.Stops {
		parts = append(parts, s.Rule+": "+s.Detail)
	}
	return fmt.Sprintf("`mcpolicy why %s --sandbox --server %s --backend %s`: %s", p, c.Plan.Server, c.Backend, strings.Join(parts, "; "))
}

func withWhy(what, whySaid string) string {
	if whySaid == "" {
		return what
	}
	return what + " (" + whySaid + ")"
}

func notOnPath(c *Context, m []string) (Finding, bool) {
	name := ""
	for _, s := range m[1:] {
		if s != "" {
			name = s
			break
		}
	}
	if name == "" || strings.Contains(name, "/") {
		return Finding{}, false
	}
	path := sandboxPATH + " (fixed: PATH is not granted)"
	if slices.Contains(c.Plan.EnvNames(), "PATH") {
		path = "the client's PATH (granted)"
	}
	f := Finding{What: fmt.Sprintf("%q is not on the sandbox's PATH, %s", name, path)}
	look := c.LookPath
	if look == nil {
		look = exec.LookPath
	}
	host, err := look(name)
	if err != nil {
		f.Fix = fmt.Sprintf("%q is not on this machine's PATH either: install it, then mount its folder and name it by its absolute path in command", name)
		return f, true
	}
	dir := filepath.Dir(host)
	f.Fix = fmt.Sprintf("it is %s on this machine: add {source: %q, target: %q} to mounts and name it %q in command (or grant PATH: env: [\"PATH\"], with %s in it)", host, dir, dir, host, dir)
	return f, true
}

func readOnly(c *Context, m []string) (Finding, bool) {
	p := pathIn(m[0])
	if p == "" {
		return Finding{What: "the server wrote to a read-only file system", Fix: "give it a writable place: set scratch: {target: \"/tmp\", size: \"64m\"} (a bounded tmpfs, gone at exit), or a read-write mount (mode: \"rw\")"}, true
	}
	f := Finding{What: withWhy(fmt.Sprintf("the server could not write %s: read-only there", p), c.whySays(p))}
	dir := p
	if filepath.Ext(p) != "" {
		dir = filepath.Dir(p)
	}
	if mt := c.mountOf(p); mt != nil && mt.Mode != compiler.ReadWrite {
		f.Fix = fmt.Sprintf("it lies in the read-only mount of %s at %s (%s): make that mount mode: \"rw\" if the server must keep what it writes, or set scratch: {target: %q, size: \"64m\"} for files it may lose at exit", c.Machine.Resolve(mt.Source), mt.Target, mt.Pos, dir)
		return f, true
	}
	if s := c.Plan.Scratch; s != nil && within(p, s.Target) {
		f.Fix = fmt.Sprintf("it lies in the scratch at %s, which is writable: the scratch may be full (size %d bytes): raise scratch.size", s.Target, s.SizeBytes)
		return f, true
	}
	f.Fix = fmt.Sprintf("nothing writable is granted there (the sandbox's root is read-only): set scratch: {target: %q, size: \"64m\"} (a bounded tmpfs, gone at exit), or add {source: HOST_FOLDER, target: %q, mode: \"rw\"} to mounts", dir, dir)
	return f, true
}

func missingPath(c *Context, m []string) (Finding, bool) {
	p := pathIn(m[0])
	if p == "" || p == "/" {
		return Finding{}, false
	}
	f := Finding{What: withWhy(fmt.Sprintf("%s does not exist in the sandbox", p), c.whySays(p))}
	if d := hostPaths(c.verdict(p)); d != "" {
		f.Fix = fmt.Sprintf("%s: give the mount a target equal to its source, or start the server on a backend that remaps paths (bwrap, docker)", d)
		return f, true
	}
	if mt := c.mountOf(p); mt != nil && mt.Target != "/" {
		host := c.hostOf(p)
		if _, err := os.Lstat(host); err != nil {
			f.Fix = fmt.Sprintf("it lies in the mount of %s at %s (%s), but %s does not exist on this machine: create it, or point the server at a path that exists", c.Machine.Resolve(mt.Source), mt.Target, mt.Pos, host)
			return f, true
		}
	}
	if _, err := os.Stat(p); err == nil {
		f.Fix = fmt.Sprintf("it exists on this machine: add {source: %q, target: %q} to mounts (read-only; mode: \"rw\" if the server writes there)", p, p)
		return f, true
	}
	f.Fix = fmt.Sprintf("%s does not exist on this machine either: the server expects it; create it and mount it, or configure the server to use a path that is granted", p)
	return f, true
}

func permission(c *Context, m []string) (Finding, bool) {
	p := pathIn(m[0])
	if p == "" {
		return Finding{}, false
	}
	host := c.hostOf(p)
	for src, msg := range c.Unwritable {
		if within(host, src) {
			return Finding{What: fmt.Sprintf("%s is in a read-write grant its user cannot write on this machine", p), Fix: msg}, true
		}
	}
	f := Finding{What: withWhy(fmt.Sprintf("the server was denied %s", p), c.whySays(p))}
	switch mt := c.mountOf(p); {
	case mt != nil && mt.Mode == compiler.ReadWrite:
		f.Fix = fmt.Sprintf("it lies in the read-write mount of %s (%s): check that the server's user (%s) may write %s on this machine (chown, or user: \"invoker\"); a protected name inside the mount stays read-only (unprotect: [...])", c.Machine.Resolve(mt.Source), mt.Pos, c.Plan.User, host)
	case mt != nil:
		f.Fix = fmt.Sprintf("it lies in the read-only mount of %s (%s): make it mode: \"rw\" if the server must write there", c.Machine.Resolve(mt.Source), mt.Pos)
	default:
		f.Fix = fmt.Sprintf("no grant gives it (Landlock denies what is not granted): add {source: %q, target: %q} to mounts if the server needs it", p, p)
	}
	return f, true
}
