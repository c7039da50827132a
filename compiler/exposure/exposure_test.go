package exposure_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/compiler/credstore"
	"github.com/mcpolicy/mcpolicy/compiler/diff"
	"github.com/mcpolicy/mcpolicy/compiler/exposure"
	"github.com/mcpolicy/mcpolicy/compiler/lint"
	"github.com/mcpolicy/mcpolicy/internal/protect"
	"github.com/mcpolicy/mcpolicy/schema"
)

func weight(t *testing.T, kind compiler.GrantKind, refinement string) int {
	t.Helper()
	w, ok := exposure.Weights().Lookup(kind, refinement)
	if !ok {
		t.Fatalf("no weight for %s: %s", kind, refinement)
	}
	return w.Weight
}

// TestDataRules: the rules weights.cue states of itself.
func TestDataRules(t *testing.T) {
	tab := exposure.Weights()
	for _, w := range append(slices.Clone(tab.Weights), tab.Unknown) {
		if w.Weight < 1 || w.Weight > 100 {
			t.Errorf("%s: %s weighs %d: want 1 to 100 (every grant adds)", w.Kind, w.Refinement, w.Weight)
		}
		if strings.TrimSpace(w.Reason) == "" || strings.Contains(w.Reason, "\n") {
			t.Errorf("%s: %s: the reason must be one line", w.Kind, w.Refinement)
		}
	}
	classes := []string{"root", "homes", "home", "credentials", "secret file", "in home", "elsewhere", "project", "in project"}
	for _, c := range classes {
		if ro, rw := weight(t, compiler.GrantMountRO, c), weight(t, compiler.GrantMountRW, c); rw <= ro {
			t.Errorf("mount class %q: rw weighs %d, ro %d: making a mount writable must raise the score", c, rw, ro)
		}
	}
	// A folder weighs more than every class it holds.
	holds := [][2]string{{"root", "homes"}, {"root", "elsewhere"}, {"homes", "home"}, {"home", "credentials"},
		{"home", "secret file"}, {"home", "in home"}, {"project", "in project"}}
	for _, k := range []compiler.GrantKind{compiler.GrantMountRO, compiler.GrantMountRW} {
		for _, h := range holds {
			if up, down := weight(t, k, h[0]), weight(t, k, h[1]); up <= down {
				t.Errorf("%s: %q weighs %d, not more than %q (%d), which it holds", k, h[0], up, h[1], down)
			}
		}
	}
	// diff's EGRESS_WIDENED: entries replaced by a wildcard covering them
	// (docs/exposure.md promises up to three).
	if w, h := weight(t, compiler.GrantEgress, "wildcard"), weight(t, compiler.GrantEgress, "host"); w <= 3*h {
		t.Errorf("egress: a wildcard (%d) must weigh more than three names it covers (%d each)", w, h)
	}
	if weight(t, compiler.GrantEnv, "secret") <= weight(t, compiler.GrantEnv, "plain") {
		t.Error("env: a secret's name must weigh more than a setting's")
	}
	if weight(t, compiler.GrantRootUser, "uid0") <= weight(t, compiler.GrantInvoker, "invoker") {
		t.Error("root must weigh more than the invoking user, who is never root")
	}
}

// TestLoadRefuses: the loader refuses unknown fields, a missing or extra
// refinement, a weight out of range and a reason of two lines.
func TestLoadRefuses(t *testing.T) {
	src, err := os.ReadFile("weights.cue")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exposure.Load(src); err != nil {
		t.Fatalf("weights.cue: %v", err)
	}
	edits := map[string][2]string{
		"unknown field":         {`uid0: {weight: 20,`, `uid0: {points: 3, weight: 20,`},
		"unknown refinement":    {`bounded: {weight: 1,`, `bounded: {weight: 1, reason: "x"}, unbounded: {weight: 1,`},
		"missing refinement":    {`plain: {weight: 2, reason: "a variable passed through by name: its value reaches the server"}`, ``},
		"weight 0":              {`bounded: {weight: 1,`, `bounded: {weight: 0,`},
		"two-line reason":       {`reason: "one host name and port reachable through the proxy"`, `reason: "one host\nname"`},
		"unprotect not a name":  {`".git": {weight: 25,`, `".gitx": {weight: 25,`},
		"unknown grant kind":    {`unknown: {weight: 50,`, `"sudo": {any: {weight: 1, reason: "x"}}, unknown: {weight: 50,`},
		"unknown match section": {`notSecretFiles: ["*.pub"]`, `notSecretFiles: ["*.pub"], secretDirs: []`},
	}
	for name, e := range edits {
		edited := strings.Replace(string(src), e[0], e[1], 1)
		if edited == string(src) {
			t.Errorf("%s: the edit does not apply", name)
			continue
		}
		if _, err := exposure.Load([]byte(edited)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

// TestDegradationsMatchSchema: every degradation a policy may accept
// (schema #Degradation) has its own weight, and no other name has one.
func TestDegradationsMatchSchema(t *testing.T) {
	def := cuecontext.New().CompileBytes(schema.Source()).LookupPath(cue.ParsePath("#Degradation"))
	op, args := def.Expr()
	if op != cue.OrOp {
		t.Fatalf("#Degradation is %v, want a disjunction", op)
	}
	var want []string
	for _, a := range args {
		s, err := a.String()
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	var got []string
	for _, w := range exposure.Weights().Weights {
		if w.Kind == compiler.GrantDegrade {
			got = append(got, w.Refinement)
		}
	}
	sort.Strings(want)
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Errorf("weights for accepted degradations: %q\nschema #Degradation: %q", got, want)
	}
}

// TestEveryGrantKindWeighed: each GrantKind constant of package compiler
// has weights, read from its source so that a new kind fails here.
func TestEveryGrantKindWeighed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../grants.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	have := map[compiler.GrantKind]bool{}
	for _, w := range exposure.Weights().Weights {
		have[w.Kind] = true
	}
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		vs, ok := node.(*ast.ValueSpec)
		if !ok || vs.Type == nil || fmt.Sprint(vs.Type) != "GrantKind" {
			return true
		}
		for _, v := range vs.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok {
				continue
			}
			s, _ := strconv.Unquote(lit.Value)
			n++
			if !have[compiler.GrantKind(s)] {
				t.Errorf("grant kind %q has no weights in weights.cue", s)
			}
		}
		return true
	})
	if n < 9 {
		t.Errorf("found %d GrantKind constants in ../grants.go, want at least 9", n)
	}
}

// TestCredentialStoresMatchLint: lint's MOUNT_CREDENTIALS and the score
// read one list. (Until lint's CredentialStores is credstore.Stores, the
// two must stay equal.)
func TestCredentialStoresMatchLint(t *testing.T) {
	if !slices.Equal(credstore.Stores, lint.CredentialStores) {
		t.Errorf("credstore.Stores = %q\nlint.CredentialStores = %q", credstore.Stores, lint.CredentialStores)
	}
}

// TestMountClassAgreesWithLint: the score's lexical reading of a host path
// (home, credential store, homes) agrees with lint's (ReadHostPath), which
// reads client configs of any platform.
func TestMountClassAgreesWithLint(t *testing.T) {
	tab := exposure.Weights()
	for _, p := range []string{"/", "/home", "/Users", "/var", "/home/alice", "/Users/bob", "/root", "/var/root",
		"/home/alice/.ssh", "/home/alice/.ssh/id_ed25519", "/Users/bob/Library", "/Users/bob/Library/Keychains/login.keychain-db",
		"/home/alice/.config", "/home/alice/.config/gh/hosts.yml", "/root/.docker/config.json", "/root/.docker",
		"/home/alice/src", "/home/alice/.cache/x", "/opt/data", "/srv", "/etc/ssl"} {
		class, stores := tab.MountClass(compiler.HostPath{Rel: p})
		f := lint.ReadHostPath(p)
		var want string
		switch {
		case f.Root:
			want = "root"
		case f.HoldsHomes:
			want = "homes"
		case f.IsHome():
			want = "home"
		case len(f.Stores()) > 0:
			want = "credentials"
		case f.Home != "":
			want = "in home"
		default:
			want = "elsewhere"
		}
		if p == "/var" && want == "elsewhere" {
			want = "homes" // the score: /var holds /var/root; lint reads only /home, /Users and drives as holding homes
		}
		if class != want {
			t.Errorf("%s: class %q, lint reads %q (%+v)", p, class, want, f)
		}
		if class == "credentials" {
			var ls []string
			for _, s := range f.Stores() {
				ls = append(ls, strings.TrimPrefix(s, "~/"))
			}
			if !slices.Equal(stores, ls) {
				t.Errorf("%s: stores %q, lint's %q", p, stores, ls)
			}
		}
	}
}

// TestMountClass: ~-relative and project-relative sources, read lexically.
func TestMountClass(t *testing.T) {
	tab := exposure.Weights()
	for _, c := range []struct {
		base  compiler.Base
		rel   string
		class string
	}{
		{compiler.Home, ".", "home"},
		{compiler.Home, "..", "homes"},
		{compiler.Home, "../bob", "home"},
		{compiler.Home, "../bob/.aws", "credentials"},
		{compiler.Home, ".ssh/config", "credentials"},
		{compiler.Home, "Library", "credentials"},
		{compiler.Home, ".docker", "credentials"},
		{compiler.Home, ".docker/buildx", "in home"},
		{compiler.Home, "app/.env", "secret file"},
		{compiler.Home, "id_rsa", "secret file"},
		{compiler.Home, "id_rsa.pub", "in home"},
		{compiler.ProjectRoot, ".", "project"},
		{compiler.ProjectRoot, "src", "in project"},
		{compiler.ProjectRoot, ".env.local", "secret file"},
		{compiler.ProjectRoot, "certs/server.key", "secret file"},
		{compiler.Absolute, "/etc/app/tls.pem", "secret file"},
		{compiler.Self, ".", "elsewhere"},
	} {
		if got, _ := tab.MountClass(compiler.HostPath{Base: c.base, Rel: c.rel}); got != c.class {
			t.Errorf("%s: class %q, want %q", compiler.HostPath{Base: c.base, Rel: c.rel}, got, c.class)
		}
	}
}

// Pools the property test draws from.
var (
	sources = []compiler.HostPath{
		{Base: compiler.Absolute, Rel: "/"}, {Base: compiler.Absolute, Rel: "/home"}, {Base: compiler.Absolute, Rel: "/var/root/.ssh"},
		{Base: compiler.Absolute, Rel: "/home/bob/.kube/config"}, {Base: compiler.Absolute, Rel: "/opt/data/set"},
		{Base: compiler.Home, Rel: "."}, {Base: compiler.Home, Rel: ".config/gcloud/creds"}, {Base: compiler.Home, Rel: ".cache/a/b"},
		{Base: compiler.Home, Rel: "Library/Keychains"}, {Base: compiler.Home, Rel: "app/.env"}, {Base: compiler.Home, Rel: "keys/x.pem"},
		{Base: compiler.ProjectRoot, Rel: "."}, {Base: compiler.ProjectRoot, Rel: "src/lib"}, {Base: compiler.ProjectRoot, Rel: ".env"},
		{Base: compiler.ProjectRoot, Rel: "a/b/c.key"},
	}
	envNames    = []string{"GITHUB_TOKEN", "LOG_LEVEL", "DB_PASSWORD", "AWS_REGION", "API_KEY", "HOME_URL", "NPM_TOKEN", "LANG"}
	egress      = []string{"api.github.com:443", "*.example.com:443", "10.0.0.5:5432", "140.82.112.3:443", "example.org:80", "*.npmjs.org:443"}
	degradation = []string{"landlock-tcp-only", "landlock-no-scope", "landlock-scratch-dir", "landlock-unix-sockets",
		"seatbelt-scratch-dir", "rw-holds-project", "some-future-degradation"}
)

func randomPlan(r *rand.Rand) *compiler.Plan {
	p := &compiler.Plan{Server: "s"}
	for i, n := 0, r.IntN(4); i < n; i++ {
		p.Mounts = append(p.Mounts, randomMount(r, len(p.Mounts)))
	}
	if r.IntN(2) == 0 {
		p.Scratch = &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20}
	}
	for _, e := range pick(r, envNames) {
		p.Env = append(p.Env, compiler.EnvGrant{Name: e})
	}
	p.Network.Mode = "none"
	if p.Network.Allow = compiler.MustDestinations(pick(r, egress)...); len(p.Network.Allow) > 0 {
		p.Network.Mode = "allowlist"
	}
	for _, u := range pick(r, protect.Patterns()) {
		p.Unprotected = append(p.Unprotected, compiler.Unprotection{Name: u})
	}
	for _, a := range pick(r, degradation) {
		p.Accept = append(p.Accept, compiler.Accepted{Name: a})
	}
	switch r.IntN(3) {
	case 0:
		p.User = compiler.User{UID: 0, GID: 0}
	case 1:
		p.User = compiler.User{UID: -1, GID: -1, Invoker: true}
	default:
		p.User = compiler.User{UID: 1000, GID: 1000}
	}
	return p
}

func randomMount(r *rand.Rand, n int) compiler.Mount {
	mode := compiler.ReadOnly
	if r.IntN(2) == 0 {
		mode = compiler.ReadWrite
	}
	return compiler.Mount{Source: sources[r.IntN(len(sources))], Target: fmt.Sprintf("/m%d", n), Mode: mode}
}

// pick returns a random subset of list, in its order.
func pick(r *rand.Rand, list []string) []string {
	var out []string
	for _, s := range list {
		if r.IntN(3) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// addGrant adds one grant the plan does not have yet, of a random kind.
func addGrant(r *rand.Rand, p *compiler.Plan) (string, bool) {
	switch r.IntN(8) {
	case 0:
		m := randomMount(r, len(p.Mounts))
		p.Mounts = append(p.Mounts, m)
		return "mount " + m.Source.String(), true
	case 1:
		if p.Scratch == nil {
			p.Scratch = &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20}
			return "scratch", true
		}
	case 2:
		if e := envNames[r.IntN(len(envNames))]; !slices.Contains(p.EnvNames(), e) {
			p.Env = append(p.Env, compiler.EnvGrant{Name: e})
			return "env " + e, true
		}
	case 3:
		if e := egress[r.IntN(len(egress))]; !slices.Contains(p.Network.Entries(), e) {
			p.Network.Allow = append(p.Network.Allow, compiler.MustDestinations(e)...)
			p.Network.Mode = "allowlist"
			return "egress " + e, true
		}
	case 4:
		pats := protect.Patterns()
		if u := pats[r.IntN(len(pats))]; !slices.Contains(p.UnprotectedNames(), u) {
			p.Unprotected = append(p.Unprotected, compiler.Unprotection{Name: u})
			return "unprotect " + u, true
		}
	case 5:
		if a := degradation[r.IntN(len(degradation))]; !p.Accepts(a) {
			p.Accept = append(p.Accept, compiler.Accepted{Name: a})
			return "accept " + a, true
		}
	case 6:
		if !p.User.Root() && !p.User.Invoker {
			p.User = compiler.User{UID: 0, GID: 0}
			return "root user", true
		}
	case 7:
		if !p.User.Root() && !p.User.Invoker {
			p.User = compiler.User{UID: -1, GID: -1, Invoker: true}
			return "invoking user", true
		}
	}
	return "", false
}

func clonePlan(p *compiler.Plan) *compiler.Plan {
	c := *p
	c.Mounts = slices.Clone(p.Mounts)
	c.Env = slices.Clone(p.Env)
	c.Network.Allow = slices.Clone(p.Network.Allow)
	c.Unprotected = slices.Clone(p.Unprotected)
	c.Accept = slices.Clone(p.Accept)
	return &c
}

// checkScore: one term per grant, in Grants() order, summing to Total.
func checkScore(t *testing.T, p *compiler.Plan, e exposure.Exposure) {
	t.Helper()
	gs, sum := p.Grants(), 0
	if len(e.Terms) != len(gs) {
		t.Fatalf("%d terms for %d grants", len(e.Terms), len(gs))
	}
	for i, term := range e.Terms {
		if term.Grant() != gs[i] {
			t.Errorf("term %d is %+v, grant %+v", i, term.Grant(), gs[i])
		}
		if term.Weight < 1 {
			t.Errorf("term %d (%s) weighs %d", i, term.Label(), term.Weight)
		}
		sum += term.Weight
	}
	if sum != e.Total {
		t.Errorf("total %d, terms sum to %d", e.Total, sum)
	}
}

// TestAddingAGrantRaises is the property the score promises: adding any
// grant to a plan raises its score (every weight is at least 1), making a
// mount writable raises it, and the score is deterministic.
func TestAddingAGrantRaises(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 2))
	for i := 0; i < 1500; i++ {
		p := randomPlan(r)
		before := exposure.Score(p)
		checkScore(t, p, before)
		if again := exposure.Score(p); fmt.Sprint(again) != fmt.Sprint(before) {
			t.Fatalf("two scores of one plan differ:\n%v\n%v", before, again)
		}
		q := clonePlan(p)
		what, ok := addGrant(r, q)
		if !ok {
			continue
		}
		after := exposure.Score(q)
		checkScore(t, q, after)
		if after.Total <= before.Total {
			t.Fatalf("adding %s: score %d -> %d\n%s%s", what, before.Total, after.Total, exposure.Explain(before), exposure.Explain(after))
		}
		if d := exposure.Delta(p, q); d.Delta != after.Total-before.Total || len(d.Added) != 1 || len(d.Removed) != 0 {
			t.Fatalf("adding %s: delta %+v", what, d)
		}
		for j, m := range p.Mounts {
			if m.Mode == compiler.ReadWrite {
				continue
			}
			w := clonePlan(p)
			w.Mounts[j].Mode = compiler.ReadWrite
			if got := exposure.Score(w).Total; got <= before.Total {
				t.Fatalf("making %s writable: score %d -> %d", m.Source, before.Total, got)
			}
		}
	}
}

// TestMovingUpNeverLowers: a mount moved to a parent of its source (diff's
// MOUNT_MOVED_UP) never weighs less, but for a source named like a secret,
// whose folder is scored by its own name: the score does not read what a
// folder holds.
func TestMovingUpNeverLowers(t *testing.T) {
	tab := exposure.Weights()
	for _, src := range sources {
		for _, mode := range []compiler.GrantKind{compiler.GrantMountRO, compiler.GrantMountRW} {
			class, _ := tab.MountClass(src)
			w, _ := tab.Lookup(mode, class)
			for p := src; ; {
				switch {
				case p.Rel == "." && p.Base == compiler.Home:
					p.Rel = ".." // the folder holding the homes
				case p.Rel == "." || p.Rel == ".." || p.Rel == "/":
					p.Rel = ""
				default:
					p.Rel = path.Dir(p.Rel)
				}
				if p.Rel == "" {
					break
				}
				upClass, _ := tab.MountClass(p)
				up, _ := tab.Lookup(mode, upClass)
				if up.Weight < w.Weight && class != "secret file" {
					t.Errorf("%s %s (%s, %d) moved up to %s (%s, %d) weighs less", mode, src, class, w.Weight, p, upClass, up.Weight)
				}
			}
		}
	}
}

// TestExplainUnknown: a grant kind or degradation the data does not name
// weighs "unknown", heavy, and says so.
func TestExplainUnknown(t *testing.T) {
	p := &compiler.Plan{Server: "s", User: compiler.User{UID: 1000, GID: 1000}, Accept: []compiler.Accepted{{Name: "landlock-future"}}}
	e := exposure.Score(p)
	checkScore(t, p, e)
	if e.Total != exposure.Weights().Unknown.Weight || e.Terms[0].Refinement != "unknown" {
		t.Errorf("unknown degradation: %s", exposure.Explain(e))
	}
}

// TestDoc: docs/exposure.md holds the generated weights between its
// markers, and its example breakdown is the bundled example's.
// MCPOLICY_UPDATE=1 rewrites both.
func TestDoc(t *testing.T) {
	const file = "../../docs/exposure.md"
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	out, err := exposure.Splice(s)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}

	// The example: exposure.Explain of examples/code-index.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const fence = "```text\n"
	k := strings.Index(out, fence+"code-index: exposure")
	if k < 0 {
		t.Fatalf("%s lacks the example block (```text, code-index: exposure ...)", file)
	}
	k += len(fence)
	l := k + strings.Index(out[k:], "```")
	t.Chdir(root)
	pol, err := schema.Load("examples/code-index/mcpolicy.cue", filepath.Join(root, "examples/code-index"))
	if err != nil {
		t.Fatal(err)
	}
	plans, err := compiler.Compile([]*schema.Policy{pol}, compiler.Options{Root: filepath.Join(root, "examples/code-index"), Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out = out[:k] + exposure.Explain(exposure.Score(plans[0])) + out[l:]

	if out == s {
		return
	}
	if os.Getenv("MCPOLICY_UPDATE") == "1" {
		if err := os.WriteFile(filepath.Join(root, "docs/exposure.md"), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is stale: run MCPOLICY_UPDATE=1 go test ./compiler/exposure/ -run TestDoc", file)
}

// TestDiffWideningsRaise: for each widening mcpolicy diff reports of one
// change to a plan, the score's delta. Adding a grant (MOUNT_ADDED,
// SCRATCH_ADDED, ENV_ADDED, NETWORK_OPENED, EGRESS_ADDED, UNPROTECT_ADDED,
// DEGRADATION_ACCEPTED), MOUNT_RW, USER_ROOT, USER_INVOKER and
// EGRESS_WIDENED of one entry raise it; MOUNT_MOVED_UP never lowers it but
// from a secret-named source (TestMovingUpNeverLowers). The widenings that
// are no grant (SCRATCH_GREW, LIMIT_RAISED, BASELINE_WIDENED) and
// MOUNT_SOURCE (another folder, heavier or lighter) are not scored.
func TestDiffWideningsRaise(t *testing.T) {
	raises := map[string]bool{"MOUNT_ADDED": true, "SCRATCH_ADDED": true, "ENV_ADDED": true, "NETWORK_OPENED": true,
		"EGRESS_ADDED": true, "UNPROTECT_ADDED": true, "DEGRADATION_ACCEPTED": true, "MOUNT_RW": true,
		"USER_ROOT": true, "USER_INVOKER": true, "EGRESS_WIDENED": true}
	r := rand.New(rand.NewPCG(18, 6))
	seen := map[string]int{}
	for i := 0; i < 3000; i++ {
		p := randomPlan(r)
		q := clonePlan(p)
		var what string
		switch r.IntN(4) {
		case 0: // ro -> rw
			j := slices.IndexFunc(q.Mounts, func(m compiler.Mount) bool { return m.Mode == compiler.ReadOnly })
			if j < 0 {
				continue
			}
			q.Mounts[j].Mode, what = compiler.ReadWrite, "ro -> rw"
		case 1: // one exact entry replaced by a wildcard covering it
			j := slices.IndexFunc(q.Network.Allow, func(d compiler.Destination) bool { return d.Host == "api.github.com" })
			if j < 0 || slices.Contains(q.Network.Entries(), "*.github.com:443") {
				continue
			}
			q.Network.Allow[j] = compiler.MustDestinations("*.github.com:443")[0]
			what = "api.github.com:443 -> *.github.com:443"
		default:
			var ok bool
			if what, ok = addGrant(r, q); !ok {
				continue
			}
		}
		cs := diff.Plans([]*compiler.Plan{p}, []*compiler.Plan{q})
		d := exposure.Delta(p, q)
		for _, c := range cs {
			seen[c.Kind]++
			if c.Verdict == diff.Widened && !raises[c.Kind] {
				t.Errorf("%s: diff reports %s, which the score does not promise to raise", what, c.Kind)
			}
		}
		if len(cs) == 0 || d.Delta <= 0 {
			t.Fatalf("%s: diff %v, score delta %+d\n%s", what, cs, d.Delta, exposure.ExplainDelta(d))
		}
	}
	for k := range raises {
		if seen[k] == 0 {
			t.Errorf("no case of %s", k)
		}
	}
}
