package prove

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// The tests in this file need no sandbox: they check what prove asks for
// and expects, computed from the plan, and how it reports it.

// fixture is a machine with a project (README.md, data/, docs/), a home
// holding ~/.aws/credentials, and folders beside the project.
type fixture struct {
	base, root, home string
}

func newFixture(t *testing.T, beside ...string) fixture {
	t.Helper()
	base := t.TempDir()
	f := fixture{base: base, root: filepath.Join(base, "proj"), home: filepath.Join(base, "home")}
	for _, d := range append([]string{"proj/data", "proj/docs", "home/.aws"}, beside...) {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"proj/README.md": "hi\n", "proj/data/old.txt": "old\n", "home/.aws/credentials": "secret\n"} {
		if err := os.WriteFile(filepath.Join(base, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f fixture) view(mounts ...compiler.Mount) planView {
	return planView{&compiler.Plan{Server: "fs", Mounts: mounts, Backends: []string{"bwrap", "landlock", "docker"}},
		compiler.Machine{ProjectRoot: f.root, Home: f.home}}
}

func projectMount(rel, target string, mode compiler.Mode) compiler.Mount {
	return compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: rel}, Target: target, Mode: mode}
}

func absMount(path, target string) compiler.Mount {
	return compiler.Mount{Source: compiler.HostPath{Base: compiler.Absolute, Rel: path}, Target: target, Mode: compiler.ReadOnly}
}

func homeMount(rel, target string) compiler.Mount {
	return compiler.Mount{Source: compiler.HostPath{Base: compiler.Home, Rel: rel}, Target: target, Mode: compiler.ReadOnly}
}

var testPlanted = &planted{env: "MCPOLICY_PROVE_CANARY_1", socket: "/run/user/none/mcpolicy-prove-sock-1/host.sock"}

func find(as []attempt, what string) (attempt, bool) {
	for _, a := range as {
		if a.what == what {
			return a, true
		}
	}
	return attempt{}, false
}

// Issue #15 item 6, point 1: the folder beside the project that prove
// lists, expecting a denial, is chosen from the plan outside every grant:
// not a mount's source (a-shared sorts first, and the old code took it),
// not a folder holding a nested one (b-holds/inner), not a home grant.
func TestBesideTheProjectIsOutsideEveryGrant(t *testing.T) {
	f := newFixture(t, "a-shared", "b-holds/inner", "c-free")
	v := f.view(projectMount(".", "/workspace", compiler.ReadOnly), absMount(filepath.Join(f.base, "a-shared"), "/shared"),
		absMount(filepath.Join(f.base, "b-holds/inner"), "/inner"))
	as := attempts(v, nil, "127.0.0.1:1", testPlanted, nil)
	a, ok := find(as, "beside the project, in its parent folder")
	if !ok || a.skip != "" || a.host != filepath.Join(f.base, "c-free") || a.expect != "denied" {
		t.Fatalf("beside the project: %+v, want a denied listing of c-free", a)
	}
	// Every denial prove expects is of a target outside every grant.
	for _, a := range as {
		if a.expect == "denied" && a.skip == "" && a.host != "" && filepath.IsAbs(a.host) && a.op != probe.Create && a.op != probe.Write {
			if g := v.grantOf(a.host, a.op); g != "" {
				t.Errorf("%s %s: expected denied, but %s", a.op, a.host, g)
			}
		}
	}
}

// With every folder beside the project granted, the row is skipped with
// its reason, and a skipped row is never a disagreement.
func TestBesideTheProjectSkippedWhenAllGranted(t *testing.T) {
	f := newFixture(t, "a-shared")
	v := f.view(projectMount(".", "/workspace", compiler.ReadOnly), absMount(filepath.Join(f.base, "a-shared"), "/shared"),
		homeMount(".aws", "/aws"))
	// home holds a grant (~/.aws): it is not a candidate either.
	as := attempts(v, nil, "127.0.0.1:1", testPlanted, nil)
	a, _ := find(as, "beside the project, in its parent folder")
	if a.skip == "" || !strings.Contains(a.skip, "no folder beside the project") {
		t.Fatalf("beside the project: %+v, want a skipped row saying why", a)
	}
	// ~/.aws is granted: the credentials read is not expected to fail.
	c, _ := find(as, "credentials")
	if c.skip == "" || !strings.Contains(c.skip, "${HOME}/.aws") {
		t.Errorf("credentials with ~/.aws granted: %+v, want skipped naming the grant", c)
	}
	rep := &Report{Backends: []BackendReport{{Backend: "bwrap", Rows: []Row{{What: a.what, Op: "list", Expect: "denied", Skipped: a.skip, Agrees: true}}}}}
	if n := rep.Disagreements(); n != 0 {
		t.Errorf("a skipped row counted as %d disagreements", n)
	}
	if md := string(rep.Markdown()); !strings.Contains(md, "not run") || !strings.Contains(md, "no folder beside the project") {
		t.Errorf("the report does not say why the row was not run:\n%s", md)
	}
}

// A mount whose target is the host path (a common way to configure a
// file server) makes the sandbox hold the folders above it: listing the
// home folder that holds it is not a denial the plan promises.
func TestHomeListingSkippedWhenATargetIsBelowIt(t *testing.T) {
	f := newFixture(t)
	v := f.view(projectMount(".", f.root, compiler.ReadOnly), compiler.Mount{Source: compiler.HostPath{Base: compiler.Home, Rel: "notes"}, Target: filepath.Join(f.home, "notes"), Mode: compiler.ReadOnly})
	as := attempts(v, nil, "127.0.0.1:1", testPlanted, nil)
	h, _ := find(as, "home folder")
	if h.skip == "" {
		t.Errorf("home listing with a mount target below it: %+v, want skipped", h)
	}
}

// Point 2: how a tool uses a path argument, read from its name, its
// description and its inputSchema — mark3labs/mcp-filesystem-server
// v0.11.1's tools, as its tools/list words them.
func TestClassifyFilesystemServerTools(t *testing.T) {
	tool := func(name, desc string, params ...string) ToolInfo {
		ti := ToolInfo{Name: name, Description: desc, Params: map[string]string{}}
		for i := 0; i+1 < len(params); i += 2 {
			ti.Params[params[i]] = params[i+1]
		}
		return ti
	}
	for _, c := range []struct {
		tool ToolInfo
		key  string
		want string
	}{
		{tool("read_file", "Read the complete contents of a file from the file system.", "path", "Path to the file to read"), "path", UseRead},
		{tool("write_file", "Create a new file or overwrite an existing file with new content.", "path", "Path where to write the file", "content", "Content to write to the file"), "path", UseWrite},
		{tool("list_directory", "Get a detailed listing of all files and directories in a specified path.", "path", "Path of the directory to list"), "path", UseRead},
		{tool("create_directory", "Create a new directory or ensure a directory exists.", "path", "Path of the directory to create"), "path", UseWrite},
		{tool("copy_file", "Copy files and directories.", "source", "Source path of the file or directory", "destination", "Destination path"), "source", UseRead},
		{tool("copy_file", "Copy files and directories.", "source", "Source path of the file or directory", "destination", "Destination path"), "destination", UseWrite},
		{tool("move_file", "Move or rename files and directories.", "source", "Source path of the file or directory", "destination", "Destination path"), "source", UseWrite},
		{tool("move_file", "Move or rename files and directories.", "source", "Source path of the file or directory", "destination", "Destination path"), "destination", UseWrite},
		{tool("search_files", "Recursively search for files and directories matching a pattern.", "path", "Starting path for the search", "pattern", "Search pattern to match against file names"), "path", UseRead},
		{tool("get_file_info", "Retrieve detailed metadata about a file or directory.", "path", "Path to the file or directory"), "path", UseRead},
		{tool("tree", "Returns a hierarchical JSON representation of a directory structure.", "path", "Path of the directory to traverse"), "path", UseRead},
		{tool("delete_file", "Delete a file or directory from the file system.", "path", "Path to the file or directory to delete"), "path", UseWrite},
		{tool("modify_file", "Update file by finding and replacing text.", "path", "Path to the file to modify"), "path", UseWrite},
		{tool("search_within_files", "Search for text within file contents.", "path", "Starting path for the search (must be a directory)"), "path", UseRead},
		// Without tools/list, the name alone decides.
		{ToolInfo{Name: "write_file"}, "path", UseWrite},
		{ToolInfo{Name: "read_file"}, "path", UseRead},
		{ToolInfo{Name: "edit_notes"}, "path_to_file", UseWrite},
		{ToolInfo{Name: "mystery"}, "path", UseRead},
		{ToolInfo{Name: "mystery", Destructive: true}, "path", UseWrite},
	} {
		if got, why := Classify(c.tool, c.key); got != c.want {
			t.Errorf("%s %s: %s (%s), want %s", c.tool.Name, c.key, got, why, c.want)
		}
	}
}

// Point 2: what the plan expects of a read and of a write, for a
// read-only project with a read-write folder in it: a write inside the
// read-only mount is denied, inside the read-write one allowed, outside
// every grant denied; the paths are the same given either way.
func TestExpectationsByUse(t *testing.T) {
	f := newFixture(t)
	v := f.view(projectMount(".", "/workspace", compiler.ReadOnly), projectMount("data", "/workspace/data", compiler.ReadWrite))
	for _, c := range []struct {
		path        string
		read, write string
	}{
		{"/workspace/README.md", "allowed", "denied"},
		{filepath.Join(f.root, "README.md"), "allowed", "denied"}, // the host path of the same file
		{"/workspace/new.txt", "", "denied"},                      // not there: nothing to read
		{"/workspace/data/old.txt", "allowed", "allowed"},
		{"/workspace/data/new.txt", "", "allowed"},
		{filepath.Join(f.root, "data", "new.txt"), "", "allowed"},
		{filepath.Join(f.home, ".aws", "credentials"), "denied", "denied"},
		{filepath.Join(f.base, "elsewhere.txt"), "denied", "denied"},
	} {
		pc := v.locate(c.path)
		if e, why := v.readExpect(pc, probe.Read); e != c.read {
			t.Errorf("read %s: %q (%s), want %q", c.path, e, why, c.read)
		}
		if e, why := v.writeExpect(pc); e != c.write {
			t.Errorf("write %s: %q (%s), want %q", c.path, e, why, c.write)
		}
	}
	pc := v.locate(filepath.Join(f.root, "data", "new.txt"))
	if pc.target != "/workspace/data/new.txt" {
		t.Errorf("the host path's sandbox path: %s", pc.target)
	}
}

// Point 2: the call's path arguments become probe rows by use — a write
// argument is a create (or a write of an existing file) with the write's
// expectation, not a read expected to be denied (the old code's only
// kind).
func TestCallArgumentsProbedByUse(t *testing.T) {
	f := newFixture(t)
	v := f.view(projectMount(".", "/workspace", compiler.ReadOnly), projectMount("data", "/workspace/data", compiler.ReadWrite))
	o := Options{Call: &ToolCall{Tool: "move_file", Args: map[string]any{"source": "/workspace/data/old.txt", "destination": "/workspace/data/moved.txt"}}}
	cp := planCallFrom(v, o, ToolInfo{Name: "move_file", Params: map[string]string{"source": "Source path of the file or directory", "destination": "Destination path"}})
	if cp.Expect != "allowed" {
		t.Errorf("move inside the read-write folder: %q, want allowed (%+v)", cp.Expect, cp.Args)
	}
	as := attempts(v, nil, "127.0.0.1:1", testPlanted, cp)
	ops := map[string]probe.Op{}
	for _, a := range as {
		if a.call {
			ops[a.target] = a.op
			if a.expect != "allowed" {
				t.Errorf("%s %s: expected %q, want allowed", a.op, a.target, a.expect)
			}
		}
	}
	if ops["/workspace/data/old.txt"] != probe.Write || ops["/workspace/data/moved.txt"] != probe.Create {
		t.Errorf("probe ops for the move: %v", ops)
	}
	o.Call.Args = map[string]any{"path": "/workspace/notes.txt", "content": "x"}
	cp = planCallFrom(v, o, ToolInfo{Name: "write_file"})
	if cp.Expect != "denied" {
		t.Errorf("write into the read-only project: %q, want denied", cp.Expect)
	}
	o.Call.Args = map[string]any{"path": "/workspace/README.md"}
	cp = planCallFrom(v, o, ToolInfo{Name: "read_file"})
	if cp.Expect != "allowed" {
		t.Errorf("read of the read-only project: %q, want allowed", cp.Expect)
	}
}

// planCallFrom is planCall with the tool's description given, not listed.
func planCallFrom(v planView, o Options, tool ToolInfo) *CallPlan {
	cp := planCallWith(v, o, tool)
	cp.Listed = "given by the test"
	return cp
}

// Point 3: both sides refusing agree — the kernel refused the probe, the
// server refused by its own check before asking the kernel — and the
// report shows the server's reason, not an empty errno.
func TestBothRefusingAgree(t *testing.T) {
	cp := &CallPlan{Tool: ToolInfo{Name: "write_file"}, Expect: "denied", Args: []CallArg{{Key: "path", Use: UseWrite, Expect: "denied", WriteExpect: "denied"}}}
	row := &ServerRow{Tool: "write_file", Args: map[string]any{"path": "/elsewhere/x"}, Expect: "denied", Probe: "ENOENT", Agrees: true}
	judge(row, cp, true, "Error: access denied - path outside allowed directories: /elsewhere/x")
	if !row.Same || !row.Agrees || row.Errno != "" || !strings.Contains(row.Refused, "outside allowed directories") {
		t.Fatalf("kernel ENOENT, server refused: %+v", row)
	}
	rep := &Report{Server: "fs", Backends: []BackendReport{{Backend: "bwrap", Server: row}}}
	md := string(rep.Markdown())
	if strings.Contains(md, "****") || strings.Contains(md, "different results") || strings.Contains(md, "Different results") {
		t.Errorf("the report shows an empty errno or calls two refusals different:\n%s", md)
	}
	if !strings.Contains(md, "refused by the server: Error: access denied - path outside allowed directories") || !strings.Contains(md, "Both refused") {
		t.Errorf("the report lacks the server's reason:\n%s", md)
	}
	if rep.Disagreements() != 0 {
		t.Errorf("two refusals counted as a disagreement")
	}

	// The kernel's refusal on both sides: the same errno.
	row = &ServerRow{Expect: "denied", Probe: "EROFS", Agrees: true}
	judge(row, cp, true, "open /workspace/x: read-only file system")
	if !row.Same || !row.Agrees || row.Errno != "EROFS" {
		t.Errorf("EROFS on both sides: %+v", row)
	}
	// The server doing what the plan denies still disagrees.
	row = &ServerRow{Expect: "denied", Probe: "EROFS", Agrees: true, Host: []string{"created /p/x"}}
	judge(row, cp, false, "Successfully wrote 1 bytes")
	if row.Agrees {
		t.Errorf("a denied write the server made: %+v", row)
	}
	rep = &Report{Backends: []BackendReport{{Backend: "bwrap", Server: row}}}
	if rep.Disagreements() != 1 {
		t.Errorf("a server write the plan denies is not counted")
	}
	// A read the plan denies that the server answered is a disagreement.
	rcp := &CallPlan{Expect: "denied", Args: []CallArg{{Key: "path", Use: UseRead, Expect: "denied"}}}
	row = &ServerRow{Expect: "denied", Probe: "ENOENT", Agrees: true}
	judge(row, rcp, false, "[default]\naws_secret_access_key = x")
	if row.Agrees {
		t.Errorf("a denied read the server answered: %+v", row)
	}
}

// Point 4: only the server's own backends, podman as the docker
// artefact's engine; asking for another is an error.
func TestSelectBackends(t *testing.T) {
	plan := func(bs ...string) *compiler.Plan { return &compiler.Plan{Server: "s", Backends: bs} }
	for _, c := range []struct {
		backends, requested []string
		want                string
		err                 string
	}{
		{[]string{"bwrap"}, nil, "bwrap", ""},
		{[]string{"docker"}, nil, "docker podman", ""},
		{[]string{"bwrap", "landlock", "docker"}, nil, "bwrap landlock docker podman", ""},
		{[]string{"landlock", "seatbelt"}, nil, "landlock", ""},
		{[]string{"seatbelt"}, nil, "", "built for seatbelt only"},
		{[]string{"docker"}, []string{"podman"}, "podman", ""},
		{[]string{"bwrap"}, []string{"landlock"}, "", "not built for backend landlock"},
		{[]string{"bwrap"}, []string{"docker"}, "", "not built for backend docker"},
		{[]string{"bwrap"}, []string{"firejail"}, "", `unknown backend "firejail"`},
	} {
		got, err := SelectBackends(plan(c.backends...), c.requested)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v, asked %v: %v, want an error with %q", c.backends, c.requested, err, c.err)
			}
			continue
		}
		if err != nil || strings.Join(got, " ") != c.want {
			t.Errorf("%v, asked %v: %v %v, want %s", c.backends, c.requested, got, err, c.want)
		}
	}
	// Run refuses before it starts anything.
	if _, err := Run(plan("bwrap"), compiler.Machine{ProjectRoot: t.TempDir()}, Options{Backends: []string{"docker"}}); err == nil || !strings.Contains(err.Error(), "not built for backend docker") {
		t.Errorf("Run with a backend the server does not list: %v", err)
	}
}

// Point 5's host side: what a call changed is put back, and nothing is
// followed through a symbolic link a hostile server may have planted.
func TestRestorePutsBackAndFollowsNoLink(t *testing.T) {
	dir := t.TempDir()
	old, made, outside := filepath.Join(dir, "old.txt"), filepath.Join(dir, "made", "deep"), filepath.Join(t.TempDir(), "victim")
	os.WriteFile(old, []byte("old\n"), 0o640)
	os.WriteFile(outside, []byte("keep\n"), 0o644)
	before := []hostState{snapshot(old), snapshot(firstMissing(made))}
	os.WriteFile(old, []byte("rewritten by the server\n"), 0o640)
	os.MkdirAll(made, 0o755)
	done, failed := restore(before)
	if b, _ := os.ReadFile(old); string(b) != "old\n" || len(failed) > 0 {
		t.Errorf("old.txt: %q; done %v, failed %v", b, done, failed)
	}
	if _, err := os.Lstat(filepath.Join(dir, "made")); !os.IsNotExist(err) {
		t.Errorf("the folder the server made is still there: %v", err)
	}
	// The server swaps the file's folder for a link to somewhere else:
	// prove must not write (nor remove) through it.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	target := filepath.Join(sub, "x")
	os.WriteFile(target, []byte("x\n"), 0o644)
	before = []hostState{snapshot(target)}
	os.RemoveAll(sub)
	os.Symlink(filepath.Dir(outside), sub)
	os.Rename(outside, filepath.Join(filepath.Dir(outside), "x"))
	_, failed = restore(before)
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(outside), "x")); string(b) != "keep\n" {
		t.Errorf("restore wrote through a symbolic link: %q", b)
	}
	if len(failed) == 0 {
		t.Errorf("restore through a link did not report a failure")
	}
}

// TestServerErrnoIsNotTheKernels: a server that answers an allowed call
// with "permission denied" while the probe, in the same confinement, was
// allowed the access, is not the kernel refusing (a red team had the plan
// blamed and prove exit 7 so); with no probe to compare, the errno stands.
func TestServerErrnoIsNotTheKernels(t *testing.T) {
	cp := &CallPlan{Tool: ToolInfo{Name: "read_file"}, Expect: "allowed", Args: []CallArg{{Key: "path", Use: UseRead, Expect: "allowed"}}}
	row := &ServerRow{Expect: "allowed", Probe: "ok", Agrees: true}
	judge(row, cp, true, "open /workspace/hello.txt: permission denied")
	if !row.Agrees || !strings.Contains(row.Note, "the server's claim, not the kernel's") {
		t.Errorf("a forged EACCES the probe did not get: %+v", row)
	}
	row = &ServerRow{Expect: "allowed", Probe: "EACCES", Agrees: true}
	judge(row, cp, true, "open /workspace/hello.txt: permission denied")
	if row.Agrees {
		t.Errorf("EACCES on both sides of an allowed call: %+v", row)
	}
}
