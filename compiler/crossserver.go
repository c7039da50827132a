package compiler

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/mcpolicy/mcpolicy/internal/backendtraits"
	"github.com/mcpolicy/mcpolicy/internal/position"
)

// AcceptRWHoldsOtherServer is the degradation a server accepts for a
// read-write mount that holds what another server of the policy runs or
// mounts: the grant is the writer's, so the writer accepts it.
const AcceptRWHoldsOtherServer = "rw-holds-other-server"

// used is a host path a server runs or mounts: its program, a script
// among its command words, a mount source, or a folder it runs code from.
type used struct {
	host HostPath
	abs  string       // on this machine, its base resolved
	what string       // "the program", "the script", "the mount source", "the workdir", "the folder of the program"
	at   position.Pos // the grant that names it
	run  bool         // run, not mounted: pinned when writable
	dir  bool         // code is loaded from it by name (imports, python -m, a relative path): a grant inside it holds code too
}

// crossServer runs once every server is lowered. A read-write grant of one
// server that holds another's program, a script it is given or one of its
// mount sources, or that lies in a folder the other runs code from (its
// workdir, the folder of its program or script: imports, python -m and
// relative paths load from there), lets the first decide what the second
// runs next, with the second's grants (its secrets, its egress): refused
// unless the writer accepts rw-holds-other-server. Every program or script
// that lies under another server's writable grant (an accepted one) is
// listed in the plan's ProgramPins: the client entry pins its digest, and
// the launcher refuses other bytes. Plans whose pins change are hashed
// again. A program under the server's own grant is not pinned: what it
// writes there runs with the grants it already has (and the escape
// suite's payload is exactly that).
func (c *compiler) crossServer(plans []*Plan) {
	uses := make([][]used, len(plans))
	for i, p := range plans {
		if p != nil {
			uses[i] = c.uses(p)
		}
	}
	idx := indexUses(uses)
	for a, w := range plans {
		if w == nil || w.Accepts(AcceptRWHoldsOtherServer) {
			continue
		}
		for _, s := range w.sources {
			if s.Mode != ReadWrite {
				continue
			}
			held := c.absSource(s)
			// The first use of each other server, in its order, that the
			// grant holds or lies in; the index names every candidate.
			last := -1
			for _, ref := range idx.near(held) {
				b, u := ref.plan, uses[ref.plan][ref.use]
				if b == a || b == last || plans[b] == nil {
					continue
				}
				v := plans[b]
				holds := within(u.abs, held)
				inside := u.dir && !holds && within(held, u.abs)
				if !holds && !inside || holds && c.protectedIn(w, u.abs) {
					continue
				}
				last = b
				hint := fmt.Sprintf(`grant a narrower folder server %q does not use, or mount its program read-only from a folder no server writes; or accept: [%q] on server %q, a counted grant`, v.Server, AcceptRWHoldsOtherServer, w.Server)
				if inside {
					hint = fmt.Sprintf(`grant a folder outside %s of server %q, or keep its code where no server writes; or accept: [%q] on server %q, a counted grant`, u.what, v.Server, AcceptRWHoldsOtherServer, w.Server)
					c.fail(s.at, s.field, hint,
						"read-write mount of %q lies in %s of server %q, %s (%s): this server could write code there, and %q would load it (an import, python -m, a relative path) with its own grants on its next launch",
						s.written, u.what, v.Server, u.host, u.at, v.Server)
					continue
				}
				c.fail(s.at, s.field, hint,
					"read-write mount of %q holds %s of server %q, %s (%s): this server could rewrite it, and %q would %s what it wrote, with its own grants, on its next launch",
					s.written, u.what, v.Server, u.host, u.at, v.Server, map[bool]string{true: "run", false: "be handed"}[u.run || u.dir])
			}
		}
	}
	setOthersWritable(plans)
	writers := c.indexWritable(plans)
	for i, p := range plans {
		if p == nil {
			continue
		}
		var pins []HostPath
		seen := map[HostPath]bool{}
		for _, u := range uses[i] {
			if !u.run || seen[u.host] || !c.writable(writers, p, u.abs) {
				continue
			}
			seen[u.host] = true
			pins = append(pins, u.host)
		}
		sort.Slice(pins, func(i, j int) bool { return pins[i].Placeholder() < pins[j].Placeholder() })
		if len(pins) > 0 {
			p.ProgramPins = pins
			p.computeHash()
		}
	}
}

// useRef is a use of the policy: plans[plan]'s uses[use].
type useRef struct{ plan, use int }

// useIndex finds the uses a read-write grant may hold or lie in without
// comparing the grant with every use of every server: comparing them all
// made a policy's check grow with the square of its servers.
type useIndex struct {
	sorted []string            // every use's abs, sorted
	refs   map[string][]useRef // the uses at each abs, in plan and use order
	dirs   map[string][]useRef // the same, for folders code is loaded from
}

func indexUses(uses [][]used) *useIndex {
	idx := &useIndex{refs: map[string][]useRef{}, dirs: map[string][]useRef{}}
	for b, us := range uses {
		for k, u := range us {
			if idx.refs[u.abs] == nil {
				idx.sorted = append(idx.sorted, u.abs)
			}
			idx.refs[u.abs] = append(idx.refs[u.abs], useRef{b, k})
			if u.dir {
				idx.dirs[u.abs] = append(idx.dirs[u.abs], useRef{b, k})
			}
		}
	}
	sort.Strings(idx.sorted)
	return idx
}

// near returns, sorted by plan then use, every use held lies in or that
// lies in held (within, either way): a superset the caller checks.
func (idx *useIndex) near(held string) []useRef {
	var out []useRef
	if held == string(filepath.Separator) {
		for _, abs := range idx.sorted {
			out = append(out, idx.refs[abs]...)
		}
	} else {
		out = append(out, idx.refs[held]...)
		prefix := held + string(filepath.Separator)
		for i := sort.SearchStrings(idx.sorted, prefix); i < len(idx.sorted) && strings.HasPrefix(idx.sorted[i], prefix); i++ {
			out = append(out, idx.refs[idx.sorted[i]]...)
		}
	}
	for _, dir := range ancestors(held) {
		out = append(out, idx.dirs[dir]...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].plan != out[j].plan {
			return out[i].plan < out[j].plan
		}
		return out[i].use < out[j].use
	})
	return out
}

// ancestors are the dirs that p lies in by within's rule, p apart: "/"
// and each p[:i] before a separator.
func ancestors(p string) []string {
	out := []string{string(filepath.Separator)}
	for i := 0; i < len(p); i++ {
		if p[i] == filepath.Separator && p[:i] != string(filepath.Separator) {
			out = append(out, p[:i])
		}
	}
	return out
}

// indexWritable maps each read-write mount source's abs to the plans
// that hold it.
func (c *compiler) indexWritable(plans []*Plan) map[string][]*Plan {
	out := map[string][]*Plan{}
	for _, w := range plans {
		if w == nil {
			continue
		}
		for _, s := range w.sources {
			if s.Mode == ReadWrite {
				abs := c.absSource(s)
				out[abs] = append(out[abs], w)
			}
		}
	}
	return out
}

// setOthersWritable gives each plan the read-write mount sources outside
// the project of every other server, each once, sorted. The policy's list
// is sorted once and each plan's filtered from it: per plan, sorting
// every other server's sources made a 500-server build spend most of its
// time here. Sources in the project are left out: the one reader, the
// bwrap wrapper, refuses the project whole.
func setOthersWritable(plans []*Plan) {
	type source struct {
		key     string
		path    HostPath
		holders map[*Plan]bool
	}
	bySource := map[HostPath]*source{}
	var all []*source
	for _, p := range plans {
		if p == nil {
			continue
		}
		for _, m := range p.Mounts {
			if m.Mode != ReadWrite || m.Source.Base == ProjectRoot {
				continue
			}
			s := bySource[m.Source]
			if s == nil {
				s = &source{key: m.Source.Placeholder(), path: m.Source, holders: map[*Plan]bool{}}
				bySource[m.Source] = s
				all = append(all, s)
			}
			s.holders[p] = true
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].key < all[j].key })
	for _, p := range plans {
		if p == nil {
			continue
		}
		var out []HostPath
		for _, s := range all {
			if len(s.holders) > 1 || !s.holders[p] {
				out = append(out, s.path)
			}
		}
		p.OthersWritable = out
	}
}

// writable reports whether a read-write grant of a server other than
// self holds abs, past its protected entries; writers is indexWritable's.
func (c *compiler) writable(writers map[string][]*Plan, self *Plan, abs string) bool {
	for _, dir := range append(ancestors(abs), abs) {
		for _, w := range writers[dir] {
			if w != self && within(abs, dir) && !c.protectedIn(w, abs) {
				return true
			}
		}
	}
	return false
}

// protectedIn reports whether abs lies in an entry the launch keeps
// read-only inside the writer's read-write mounts: one the plan names, or
// (fixed top) a protected name at the top of the project.
func (c *compiler) protectedIn(w *Plan, abs string) bool {
	for _, pr := range w.Protected {
		if within(abs, c.absPath(pr.Source)) {
			return true
		}
	}
	for _, s := range w.sources {
		if !s.FixedTop() {
			continue
		}
		top := c.absSource(s)
		if rel, err := filepath.Rel(top, abs); err == nil && rel != "." && within(abs, top) {
			first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if protectedBy(first, unprotectedSet(w)) != "" {
				return true
			}
		}
	}
	return false
}

func unprotectedSet(p *Plan) map[string]bool {
	set := map[string]bool{}
	for _, u := range p.Unprotected {
		set[u.Name] = true
	}
	return set
}

// uses lists what the server runs and mounts, as host paths: its
// program, command[0] when it is a path (absolute, or relative to the
// workdir with a folder); each script among its other words (runWords);
// the folder of each, and its workdir, where code is loaded by name; its
// mount sources. A path is followed through the symlinks below its mount
// as the kernel would in the sandbox (inSandbox); when it passes through
// one, the path as written is listed too (whoever writes the link's
// folder can repoint it). Each maps to the host through the server's
// deepest mount holding it; a program under no mount is the host's own
// for host backends (inside the image, else).
func (c *compiler) uses(p *Plan) []used {
	var out []used
	host := false
	for _, b := range p.Backends {
		host = host || !backendtraits.RunsImage(b)
	}
	for _, r := range c.runWords(p) {
		what := "the program"
		if r.i > 0 {
			what = "the script"
		}
		written := path.Clean(r.sb)
		real, ok := c.inSandbox(p, written)
		if !ok && r.i == 0 && host && path.IsAbs(r.word) {
			real, ok = HostPath{Base: Absolute, Rel: written}, true
		}
		if !ok {
			continue
		}
		out = append(out, used{host: real, abs: c.absPath(real), what: what, at: p.Pos, run: true})
		dir := HostPath{Base: real.Base, Rel: path.Dir(real.Rel)}
		out = append(out, used{host: dir, abs: c.absPath(dir), what: "the folder of " + what, at: p.Pos, dir: true})
		if hp, ok := p.HostPathOf(written); ok && hp != real {
			out = append(out, used{host: hp, abs: c.absPath(hp), what: what + " (as written, through a symlink)", at: p.Pos, run: true})
		}
	}
	if p.Workdir != "" {
		if hp, ok := c.inSandbox(p, path.Clean(p.Workdir)); ok {
			out = append(out, used{host: hp, abs: c.absPath(hp), what: "the workdir", at: p.Pos, dir: true})
		}
	}
	for _, s := range p.sources {
		out = append(out, used{host: s.Source, abs: c.absSource(s), what: "the mount source", at: s.at})
	}
	return out
}

// runWord is a command word the server runs: its index and the path in
// the sandbox it names.
type runWord struct {
	i        int
	word, sb string
}

// runWords are the command words that name a file the server runs:
// command[0] when it is a path; another word (or the value of an option,
// --x=PATH) that is absolute or relative to the workdir and is a script:
// it has a script's extension (scriptExt), is the first operand of an
// interpreter (sh, python, node...: they run it whatever its name), or is
// a file on this machine that is executable or starts with #!. Other
// words (a folder, a database) are data the server is handed.
func (c *compiler) runWords(p *Plan) []runWord {
	var out []runWord
	operand := len(p.Command) > 0 && interpreter(p.Command[0])
	for i, w := range p.Command {
		word := w
		if i > 0 && strings.HasPrefix(w, "-") {
			if inlineCode[w] {
				operand = false // -c CODE, -m MODULE, -e CODE: no script operand
			}
			_, v, ok := strings.Cut(w, "=")
			if !ok || !SandboxWord(v) {
				continue
			}
			word = v
		}
		var sb string
		switch {
		case word == "":
			continue
		case SandboxWord(word):
			sb = word
		case p.Workdir != "" && (i > 0 || strings.Contains(word, "/")):
			sb = path.Join(p.Workdir, word)
		default:
			if i > 0 && word == w && operand && !subcommand[word] {
				operand = false
			}
			continue
		}
		first := i > 0 && word == w && operand && !subcommand[word]
		if i > 0 && word == w && !subcommand[word] {
			operand = false
		}
		if i == 0 || first || scriptExt[path.Ext(word)] || c.looksRun(p, path.Clean(sb)) {
			out = append(out, runWord{i, word, sb})
		}
	}
	return out
}

// looksRun reports whether the file a word names is, on this machine, one
// that is run: executable, or starting with #!.
func (c *compiler) looksRun(p *Plan, sb string) bool {
	if c.opt.NoFS {
		return false
	}
	hp, ok := c.inSandbox(p, sb)
	if !ok {
		return false
	}
	f, err := os.Open(c.absPath(hp))
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	if fi.Mode().Perm()&0o111 != 0 {
		return true
	}
	b := make([]byte, 2)
	n, _ := io.ReadFull(f, b)
	return n == 2 && string(b) == "#!"
}

// interpreter reports whether a program runs its first operand as a
// script, whatever the file's name.
func interpreter(prog string) bool {
	return interpreterRE.MatchString(path.Base(prog))
}

var interpreterRE = regexp.MustCompile(`^(sh|bash|dash|ash|ksh|mksh|zsh|fish|busybox|python[0-9.]*|pypy[0-9.]*|node|nodejs|deno|bun|tsx|ts-node|ruby[0-9.]*|perl[0-9.]*|php[0-9.]*|lua[0-9.]*|luajit|Rscript|tclsh[0-9.]*|wish|osascript)$`)

// inlineCode are an interpreter's options whose value is code or a module
// name, not a script path.
var inlineCode = map[string]bool{"-c": true, "-m": true, "-e": true, "--eval": true, "--print": true}

// subcommand are the words a runtime takes before its script (deno run,
// bun run): not the operand.
var subcommand = map[string]bool{"run": true}

// scriptExt are the extensions of the files an interpreter is given to
// run, whoever's first operand they are.
var scriptExt = map[string]bool{".py": true, ".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".mts": true,
	".sh": true, ".bash": true, ".rb": true, ".pl": true, ".php": true, ".lua": true, ".jar": true, ".wasm": true}

// inSandbox maps a sandbox path to the host file the kernel reaches
// inside the sandbox: each symlink below a mount is followed in the
// sandbox's view (an absolute target is a sandbox path, and may cross
// into another mount). False when it leaves the mounts, or loops.
func (c *compiler) inSandbox(p *Plan, sb string) (HostPath, bool) {
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(strings.TrimPrefix(sb, "/"), "/")
		cur, moved := "/", false
		for i, part := range parts {
			next := path.Join(cur, part)
			if hp, ok := p.HostPathOf(next); ok && !c.opt.NoFS {
				if t, err := os.Readlink(c.absPath(hp)); err == nil {
					if !path.IsAbs(t) {
						t = path.Join(cur, t)
					}
					sb, moved = path.Join(append([]string{t}, parts[i+1:]...)...), true
					break
				}
			}
			cur = next
		}
		if !moved {
			return p.HostPathOf(path.Clean(sb))
		}
	}
	return HostPath{}, false
}

// absSource is a mount source on this machine: resolved when checkSource
// resolved it, else its base resolved and the rest as written.
func (c *compiler) absSource(s *mountSource) string {
	if s.real != "" {
		return s.real
	}
	return c.absPath(s.Source)
}

// absPath is a host path on this machine, its base resolved (NoFS: as
// given).
func (c *compiler) absPath(h HostPath) string {
	var b string
	switch h.Base {
	case ProjectRoot:
		b = c.opt.Root
	case Home:
		b = c.opt.Home
	default:
		return filepath.Clean(filepath.FromSlash(h.Rel))
	}
	if !c.opt.NoFS {
		if r, err := c.base(h.Base); err == nil {
			b = r
		}
	}
	return filepath.Join(b, filepath.FromSlash(h.Rel))
}
