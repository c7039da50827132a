package landlock

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/toolpolicy"
)

func plan() *compiler.Plan {
	return &compiler.Plan{
		Server: "s", Command: []string{"/w/bin/server", "--stdio"}, Workdir: "/w/src",
		// A writable folder of the project, not the project itself (see
		// TestFixedTop for that).
		User:    compiler.User{UID: 1000, GID: 1000},
		Network: compiler.Network{Mode: "none"},
		Runtime: compiler.Runtime{Name: "system", ReadOnly: []string{"/usr"}},
		Mounts: []compiler.Mount{
			{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "app"}, Target: "/w", Mode: compiler.ReadWrite},
			{Source: compiler.HostPath{Base: compiler.Home, Rel: ".cache/x"}, Target: "/cache", Mode: compiler.ReadOnly},
		},
		Hash: "sha256:00",
	}
}

var machine = compiler.Machine{ProjectRoot: "/home/dev/proj", Home: "/home/dev"}

func TestBuildMapsTargetsToHostPaths(t *testing.T) {
	rs, err := Build(plan(), machine)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Workdir != "/home/dev/proj/app/src" || rs.Command[0] != "/home/dev/proj/app/bin/server" {
		t.Errorf("workdir %q, command %q: want host paths", rs.Workdir, rs.Command)
	}
	if strings.Join(rs.ReadWrite, ",") != "/home/dev/proj/app" || strings.Join(rs.ReadOnly, ",") != "/home/dev/.cache/x" {
		t.Errorf("rw %q ro %q", rs.ReadWrite, rs.ReadOnly)
	}
}

func TestRefusesWhatLandlockCannotEnforce(t *testing.T) {
	cases := []struct {
		name   string
		change func(*compiler.Plan)
		want   string
	}{
		{"ro mount inside a rw one", func(p *compiler.Plan) {
			p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "app/docs"}, Target: "/docs", Mode: compiler.ReadOnly})
		}, "Landlock rights add up"},
		{"limits", func(p *compiler.Plan) { p.Subtractions.MemoryBytes = 1 << 20 }, "no cgroup limits"},
		{"egress allowlist", func(p *compiler.Plan) {
			p.Network = compiler.Network{Mode: "allowlist", Allow: compiler.MustDestinations("x.com:443")}
		}, "not by host"},
		{"workdir outside the mounts", func(p *compiler.Plan) { p.Workdir = "/elsewhere" }, "outside every mount"},
	}
	for _, c := range cases {
		p := plan()
		c.change(p)
		_, err := Build(p, machine)
		var ne *emit.NotEnforceableError
		if !errors.As(err, &ne) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "backend landlock") || !strings.Contains(err.Error(), "hint:") {
			t.Errorf("%s: got %v; want a not-enforceable error naming %q, the backend and an alternative", c.name, err, c.want)
		}
	}
}

// TestDegradationsMustBeAccepted: on a weaker host a restriction becomes
// partial, which refuses to run until the policy accepts it by name.
func TestDegradationsMustBeAccepted(t *testing.T) {
	cases := []struct {
		host    Host
		scratch bool
		already []string // accepted beforehand: the case's refusal comes after theirs
		accept  string
	}{
		{Host{ABI: 7, UserNS: false}, false, nil, AcceptTCPOnly},
		{Host{ABI: 5, UserNS: true}, false, nil, AcceptNoScope},
		{Host{ABI: 7, UserNS: false}, true, []string{AcceptTCPOnly}, AcceptScratchDir},
	}
	for _, c := range cases {
		p := plan()
		if c.scratch {
			p.Scratch = &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20}
		}
		p.Accept = []compiler.Accepted{}
		for _, a := range c.already {
			p.Accept = append(p.Accept, compiler.Accepted{Name: a})
		}
		err := emit.Check(p, Backend, Enforcement(p, c.host))
		if err == nil || !strings.Contains(err.Error(), c.accept) {
			t.Errorf("%+v: got %v, want a refusal naming %q", c.host, err, c.accept)
		}
		p.Accept = append(p.Accept, compiler.Accepted{Name: c.accept})
		if err := emit.Check(p, Backend, Enforcement(p, c.host)); err != nil {
			t.Errorf("%+v with %q accepted: %v", c.host, c.accept, err)
		}
	}
	// Without user namespaces and below ABI 4 nothing on the network is
	// denied: no degradation can accept that.
	p := plan()
	p.Accept = []compiler.Accepted{{Name: AcceptTCPOnly}, {Name: AcceptNoScope}, {Name: AcceptUnixSockets}}
	if err := emit.Check(p, Backend, Enforcement(p, Host{ABI: 3})); err == nil {
		t.Errorf("ABI 3 without user namespaces was accepted")
	}
}

// TestUnixSocketsAndGroupsRows (issue #14): with namespaces the host's
// named unix sockets are absent and the kept supplementary groups are
// said to be harmless; without, both rows need landlock-unix-sockets.
func TestUnixSocketsAndGroupsRows(t *testing.T) {
	find := func(rows []emit.Row, name emit.Restriction) emit.Row {
		for _, r := range rows {
			if r.Restriction == name {
				return r
			}
		}
		t.Fatalf("no %q row", name)
		return emit.Row{}
	}
	p := plan()
	rows := Enforcement(p, Best)
	if r := find(rows, RowUnixSockets); r.Support != emit.Enforced || !strings.Contains(r.How, "absent") {
		t.Errorf("with user namespaces: %+v", r)
	}
	if r := find(rows, RowGroups); r.Support != emit.Enforced || !strings.Contains(r.How, "kept (unmapped") || !strings.Contains(r.How, "harmless with the minimal root") {
		t.Errorf("with user namespaces: %+v", r)
	}
	// Without user namespaces the filter refuses every unix socket; a
	// policy that accepts landlock-unix-sockets lets them (and the host's
	// named sockets) through.
	rows = Enforcement(p, Host{ABI: 7})
	for _, name := range []emit.Restriction{RowUnixSockets, RowGroups} {
		if r := find(rows, name); r.Support != emit.Enforced || !strings.Contains(r.How, "seccomp") {
			t.Errorf("without user namespaces: %+v, want enforced by the seccomp filter", r)
		}
	}
	p.Accept = []compiler.Accepted{{Name: AcceptUnixSockets}}
	rows = Enforcement(p, Host{ABI: 7})
	for _, name := range []emit.Restriction{RowUnixSockets, RowGroups} {
		if r := find(rows, name); r.Support != emit.Partial || r.Degradation != AcceptUnixSockets {
			t.Errorf("without user namespaces, accepted: %+v, want partial, accepted by %q", r, AcceptUnixSockets)
		}
	}
}

// TestArgumentsNamingSandboxPathsAreTranslated: Landlock runs with host
// paths, so an argument naming a mount target (whole, or after "--flag=")
// is given the host path; other arguments are left alone.
func TestArgumentsNamingSandboxPathsAreTranslated(t *testing.T) {
	p := plan()
	p.Command = []string{"/w/bin/server", "--root=/w/data", "/w/config.json", "stdio", "--name=/elsewhere", "/cache"}
	rs, err := Build(p, machine)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/home/dev/proj/app/bin/server", "--root=/home/dev/proj/app/data", "/home/dev/proj/app/config.json", "stdio", "--name=/elsewhere", "/home/dev/.cache/x"}
	if strings.Join(rs.Command, " ") != strings.Join(want, " ") {
		t.Errorf("command %q, want %q", rs.Command, want)
	}
	// Committed rulesets hold placeholders; the launcher resolves them in
	// every argument.
	rs, err = Build(p, compiler.Placeholders{})
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Expand("/home/dev/proj", "/home/dev"); err != nil {
		t.Fatal(err)
	}
	if strings.Join(rs.Command, " ") != strings.Join(want, " ") {
		t.Errorf("resolved command %q, want %q", rs.Command, want)
	}
}

// TestProc: proc reaches the ruleset; the report enforces it where user
// namespaces are, and refuses it without them whatever the policy accepts,
// naming the field; OnThisHost says so for such a host only. A plan
// without proc has no proc row and no proc in its ruleset.
func TestProc(t *testing.T) {
	p := plan()
	p.Backends = []string{Backend}
	if rs, err := Build(p, machine); err != nil || rs.Proc || strings.Contains(string(rs.JSON()), `"proc"`) {
		t.Fatalf("without proc: %v, %s", err, rs.JSON())
	}
	for _, r := range Enforcement(p, Best) {
		if r.Restriction == emit.Proc {
			t.Errorf("a proc row for a plan without proc: %+v", r)
		}
	}
	p.Proc = true
	rs, err := Build(p, machine)
	if err != nil || !rs.Proc {
		t.Fatalf("with proc: %v, proc %v", err, rs.Proc)
	}
	if err := OnThisHost(p, Best); err != nil {
		t.Errorf("host with user namespaces: %v", err)
	}
	p.Accept = []compiler.Accepted{{Name: AcceptTCPOnly}, {Name: AcceptNoScope}, {Name: AcceptUnixSockets}}
	noNS := Host{ABI: 7}
	err = emit.Check(p, Backend, Enforcement(p, noNS))
	var ne *emit.NotEnforceableError
	if !errors.As(err, &ne) || ne.Field != `servers.s.proc` || !strings.Contains(err.Error(), "the host's /proc is never granted") {
		t.Errorf("without user namespaces: %v, want proc refused", err)
	}
	if err := OnThisHost(p, noNS); err == nil || !strings.Contains(err.Error(), "servers.s.proc: proc (no user namespaces") {
		t.Errorf("OnThisHost without user namespaces: %v", err)
	}
	p.Backends = []string{"bwrap"}
	if err := OnThisHost(p, noNS); err != nil {
		t.Errorf("a plan not built for landlock: %v", err)
	}
}

// TestFixedTop: a read-write project root and protected paths of another
// read-write grant reach the ruleset (host paths, each protected one once
// however many targets show it), enforced where user namespaces are; on
// a host without them the report refuses both, whatever the policy
// accepts, naming the mounts, and OnThisHost says so. A plan with neither
// has no such field in its ruleset.
func TestFixedTop(t *testing.T) {
	if rs, err := Build(plan(), machine); err != nil || rs.FixedTop != "" || rs.Protected != nil ||
		strings.Contains(string(rs.JSON()), `"fixedTop"`) || strings.Contains(string(rs.JSON()), `"protected"`) {
		t.Fatalf("a plan without either: %v\n%s", err, rs.JSON())
	}
	p := plan()
	p.Backends = []string{Backend}
	p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/p", Mode: compiler.ReadWrite})
	gitDir := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "app/.git"}
	p.Protected = []compiler.Protected{{Source: gitDir, Target: "/w/.git", Name: ".git"}, {Source: gitDir, Target: "/p/app/.git", Name: ".git"}}
	p.Unprotected = []compiler.Unprotection{{Name: ".env*"}}
	rs, err := Build(p, machine)
	if err != nil {
		t.Fatal(err)
	}
	if rs.FixedTop != "/home/dev/proj" || strings.Join(rs.Protected, ",") != "/home/dev/proj/app/.git" || strings.Join(rs.Unprotected, ",") != ".env*" {
		t.Errorf("fixedTop %q, protected %q, unprotected %q", rs.FixedTop, rs.Protected, rs.Unprotected)
	}
	for _, r := range Enforcement(p, Best) {
		if (r.Restriction == emit.FixedTop || r.Restriction == emit.ProtectedPaths) && r.Support != emit.Enforced {
			t.Errorf("with user namespaces: %+v", r)
		}
	}
	if err := OnThisHost(p, Best); err != nil {
		t.Errorf("host with user namespaces: %v", err)
	}
	p.Accept = []compiler.Accepted{{Name: AcceptTCPOnly}, {Name: AcceptNoScope}, {Name: AcceptUnixSockets}}
	noNS := Host{ABI: 7}
	err = emit.Check(p, Backend, Enforcement(p, noNS))
	var ne *emit.NotEnforceableError
	if !errors.As(err, &ne) || ne.Field != "servers.s.mounts" || !strings.Contains(err.Error(), "Landlock cannot deny a path below a granted hierarchy") {
		t.Errorf("without user namespaces: %v, want the protected paths refused", err)
	}
	if err := OnThisHost(p, noNS); err == nil || !strings.Contains(err.Error(), "no user namespaces") {
		t.Errorf("OnThisHost without user namespaces: %v", err)
	}
	p.Protected = nil
	if err := OnThisHost(p, noNS); err == nil || !strings.Contains(err.Error(), "fixed top level (no user namespaces: Landlock cannot keep names from being created") {
		t.Errorf("OnThisHost without user namespaces, a fixed top level: %v", err)
	}
}

// TestToolPathsMapUnderToHostPaths: the relay is told, for each path an
// under constraint names, the host path a Landlock server sees there; a
// path no mount remaps (a scratch target) is not listed.
func TestToolPathsMapUnderToHostPaths(t *testing.T) {
	p := plan()
	p.Tools = &toolpolicy.Policy{Allow: []toolpolicy.Rule{{Pattern: "*"}}, Args: []toolpolicy.ArgRule{
		{Tool: "read_file", Arg: "path", Under: []string{"/w/data", "/tmp"}},
		{Tool: "list", Arg: "dir", Under: []string{"/w/data"}},
	}}
	rs, err := Build(p, machine)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.ToolPaths) != 1 || rs.ToolPaths[0] != (artefact.PathMap{Sandbox: "/w/data", Host: "/home/dev/proj/app/data"}) {
		t.Errorf("tool paths %+v", rs.ToolPaths)
	}
}
