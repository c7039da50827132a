package launch_test

import (
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/internal/artefact"
	"github.com/mcpolicy/mcpolicy/internal/hostcaps"
	"github.com/mcpolicy/mcpolicy/internal/testbin"
	"github.com/mcpolicy/mcpolicy/runtime/launch"
	"github.com/mcpolicy/mcpolicy/runtime/probe"
)

// copyTree copies the bundled example, world-readable and -writable, so an
// unprivileged user can run it too.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o777)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		defer out.Close()
		_, err = io.Copy(out, in)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	filepath.Walk(to, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			os.Chmod(p, map[bool]os.FileMode{true: 0o777, false: 0o666}[fi.IsDir()])
		}
		return nil
	})
}

// kernelTest skips, under -short, a test that starts a sandbox (Landlock,
// namespaces, bwrap); `make test` runs them all.
func kernelTest(t *testing.T) {
	t.Helper()
	testbin.SkipShort(t, "starts a sandbox (Landlock, namespaces, bwrap)")
}

func requireLandlock(t *testing.T) {
	t.Helper()
	kernelTest(t)
	if abi := hostcaps.Detect().ABI; abi < landlock.MinABI {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Landlock ABI %d here; CI machines must have Landlock", abi)
		}
		t.Skipf("Landlock ABI %d here", abi)
	}
}

// workdir is a world-readable folder outside /tmp: a policy's scratch is a
// tmpfs mounted over /tmp, which would hide anything there.
func workdir(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("/var/tmp", "mcpolicy-launch-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	return base
}

// goBuild puts static commands of this module (built once per test run)
// into base/bin.
func goBuild(t *testing.T, base string, names ...string) {
	t.Helper()
	for _, name := range names {
		testbin.Install(t, testbin.Build(t, "./cmd/"+name), filepath.Join(base, "bin", name))
	}
}

// TestExecSeedExample runs `mcpolicy exec` on the bundled code-index policy:
// the probe (copied into the granted project, so the policy itself lets it
// run) reads the project, and the planted credentials are not there at all
// (ENOENT: the minimal root holds only the grants and the baseline); the
// root that is there is still refused by Landlock (EACCES) — as root, and
// as an unprivileged user.
func TestExecSeedExample(t *testing.T) {
	requireLandlock(t)
	base := workdir(t)
	goBuild(t, base, "mcpolicy")
	bin := filepath.Join(base, "bin", "mcpolicy")
	example := filepath.Join(base, "code-index")
	copyTree(t, "../../examples/code-index", example)
	probeBin := filepath.Join(example, "shop", ".probe")
	copyTree(t, bin, probeBin)
	os.Chmod(probeBin, 0o755)
	home := filepath.Join(base, "home")
	os.MkdirAll(filepath.Join(home, ".aws"), 0o755)
	creds := filepath.Join(home, ".aws", "credentials")
	os.WriteFile(creds, []byte("[default]\naws_secret_access_key = planted\n"), 0o644)

	readme := filepath.Join(example, "shop", "README.md")
	expected := map[string]string{
		"read:" + readme: "ok",
		"read:" + creds:  "ENOENT",
		"list:" + home:   "ENOENT",
		"create:" + filepath.Join(example, "x.txt"):           "EROFS", // the policy file's folder is not granted: a folder of the read-only root
		"create:" + filepath.Join(example, "shop", "new.txt"): "ok",
		"read:/etc/shadow": "ENOENT",
		"list:/":           "EACCES", // the minimal root itself: Landlock still denies what is not granted
		"list:" + example:  "EACCES",
	}
	var attempts []string
	for a := range expected {
		attempts = append(attempts, a)
	}
	users := [][]string{{}} // as we are
	if os.Getuid() == 0 {
		users = append(users, []string{"setpriv", "--reuid", "1000", "--regid", "1000", "--clear-groups"})
	}
	for _, as := range users {
		name := "invoking user"
		if len(as) > 0 {
			name = "uid 1000"
		}
		t.Run(name, func(t *testing.T) {
			os.Remove(filepath.Join(example, "shop", "new.txt"))
			want := maps.Clone(expected)
			args := append(append([]string{}, as...), bin, "exec", "--policy", example, "--server", "code-index", "--", probeBin, "probe")
			cmd := exec.Command(args[0], append(args[1:], attempts...)...)
			cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
			out, err := cmd.Output()
			if err != nil {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Fatalf("%v: %v\n%s", args, err, stderr)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var r probe.Result
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("probe output %q: %v", line, err)
				}
				key := string(r.Op) + ":" + r.Target
				if r.Result != want[key] {
					t.Errorf("%s: got %s, want %s", key, r.Result, want[key])
				}
				delete(want, key)
			}
			if len(want) > 0 {
				t.Errorf("no result for %v", want)
			}
		})
	}
}

// TestFailsClosed: on a host that cannot enforce the ruleset nothing is
// started, unless the policy accepted the named degradation.
func TestFailsClosed(t *testing.T) {
	rs := func(accept ...string) *artefact.Ruleset {
		return &artefact.Ruleset{Server: "s", Command: []string{"/usr/bin/true"}, Network: "none", User: "1000:1000",
			Scratch: "/tmp", ScratchSize: 1 << 20, Accept: accept}
	}
	cases := []struct {
		host   hostcaps.Host
		want   string
		pre    []string // accepted already: the refusal is the next one
		accept []string // what makes the host acceptable
	}{
		{hostcaps.Host{ABI: 0, UserNS: true}, "refusing to start unconfined", nil, nil},
		{hostcaps.Host{ABI: 2, UserNS: true}, "refusing to start unconfined", nil, nil},
		{hostcaps.Host{ABI: 7, UserNS: false}, artefact.AcceptTCPOnly, nil, []string{artefact.AcceptTCPOnly, artefact.AcceptScratchDir}},
		{hostcaps.Host{ABI: 5, UserNS: true}, artefact.AcceptNoScope, nil, []string{artefact.AcceptNoScope}},
		{hostcaps.Host{ABI: 3, UserNS: false}, "nothing on the network can be denied", nil, nil},
		// Without namespaces the host's named unix sockets stay in view:
		// not a refusal, the seccomp filter then denies every unix socket
		// (TestLandlockAloneDeniesUnixSockets), unless accepted.
	}
	for _, c := range cases {
		_, err := launch.Start(rs(c.pre...), launch.Options{Host: &c.host})
		var ue *launch.UnsupportedError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want a refusal naming %q", c.host, err, c.want)
		}
		if c.accept != nil {
			// Accepted, the check passes (Start itself is not run here: it
			// would exec /usr/bin/true in place of the test).
			if err := launch.CheckRuleset(rs(c.accept...), c.host); err != nil {
				t.Errorf("%+v with %v accepted: %v", c.host, c.accept, err)
			}
		}
	}
}

// TestReportAndCheckAgree: what explain shows for landlock and what the
// launcher enforces come from two places; they must refuse the same hosts.
func TestReportAndCheckAgree(t *testing.T) {
	for _, h := range []hostcaps.Host{{ABI: 7, UserNS: true}, {ABI: 7}, {ABI: 5, UserNS: true}, {ABI: 5}, {ABI: 3}, {ABI: 4}} {
		for _, variant := range []struct{ scratch, proc, top, protected bool }{{false, false, false, false}, {true, false, false, false}, {false, true, false, false}, {true, true, false, false},
			{false, false, true, false}, {false, false, false, true}, {true, false, true, true}} {
			scratch := variant.scratch
			for _, accept := range [][]string{nil, {artefact.AcceptTCPOnly}, {artefact.AcceptTCPOnly, artefact.AcceptNoScope, artefact.AcceptScratchDir},
				{artefact.AcceptTCPOnly, artefact.AcceptScratchDir, artefact.AcceptUnixSockets}, {artefact.AcceptTCPOnly, artefact.AcceptNoScope, artefact.AcceptScratchDir, artefact.AcceptUnixSockets}} {
				var accepted []compiler.Accepted
				for _, a := range accept {
					accepted = append(accepted, compiler.Accepted{Name: a})
				}
				p := &compiler.Plan{Server: "s", Command: []string{"/usr/bin/true"}, Network: compiler.Network{Mode: "none"},
					Runtime: compiler.Runtime{Name: "system", ReadOnly: []string{"/usr"}}, Accept: accepted}
				if scratch {
					p.Scratch = &compiler.Scratch{Target: "/tmp", SizeBytes: 1 << 20}
				}
				p.Proc = variant.proc
				if variant.top {
					p.Mounts = append(p.Mounts, compiler.Mount{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "."}, Target: "/w", Mode: compiler.ReadWrite})
				}
				if variant.protected {
					src := compiler.HostPath{Base: compiler.ProjectRoot, Rel: "out"}
					p.Mounts = append(p.Mounts, compiler.Mount{Source: src, Target: "/out", Mode: compiler.ReadWrite})
					p.Protected = []compiler.Protected{{Source: compiler.HostPath{Base: compiler.ProjectRoot, Rel: "out/.git"}, Target: "/out/.git", Name: ".git"}}
				}
				rs, err := landlock.Build(p, compiler.Machine{ProjectRoot: "/p", Home: "/h"})
				if err != nil {
					t.Fatal(err)
				}
				report := emit.Check(p, landlock.Backend, landlock.Enforcement(p, h)) == nil
				check := h.ABI >= artefact.MinABI && launch.CheckRuleset(rs, h) == nil
				if report != check {
					t.Errorf("host %+v %+v accept %v: report says %v, launcher says %v", h, variant, accept, report, check)
				}
			}
		}
	}
}

// TestLauncherRunsCommittedRuleset: mcpolicy-launch, the small launcher,
// enforces the ruleset `mcpolicy build` committed, placeholders resolved
// from where the file lies and from $HOME.
func TestLauncherRunsCommittedRuleset(t *testing.T) {
	requireLandlock(t)
	base := workdir(t)
	goBuild(t, base, "mcpolicy", "mcpolicy-launch")
	proj := filepath.Join(base, "proj")
	os.MkdirAll(filepath.Join(proj, "bin"), 0o755)
	copyTree(t, filepath.Join(base, "bin", "mcpolicy"), filepath.Join(proj, "bin", "probe"))
	os.Chmod(filepath.Join(proj, "bin", "probe"), 0o755)
	os.WriteFile(filepath.Join(proj, "data.txt"), []byte("data\n"), 0o644)
	home := filepath.Join(base, "home")
	creds := filepath.Join(home, ".aws", "credentials")
	os.MkdirAll(filepath.Dir(creds), 0o755)
	os.WriteFile(creds, []byte("planted\n"), 0o644)
	policy := `version: "v1"
servers: s: {
	command: ["/w/bin/probe", "probe", "read:/w/data.txt", "read:` + filepath.Join(proj, "data.txt") + `", "read:` + creds + `", "create:` + filepath.Join(proj, "x") + `"]
	backends: ["landlock"]
	mounts: [{source: ".", target: "/w"}]
}
`
	os.WriteFile(filepath.Join(proj, "mcpolicy.cue"), []byte(policy), 0o644)
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	build := exec.Command(filepath.Join(base, "bin", "mcpolicy"), "build", proj)
	build.Env = env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("mcpolicy build: %v\n%s", err, out)
	}
	cmd := exec.Command(filepath.Join(base, "bin", "mcpolicy-launch"), filepath.Join(proj, ".mcpolicy", "landlock", "s.json"))
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpolicy-launch: %v", err)
	}
	// Landlock shows host paths: /w exists only as the policy's target. The
	// credentials are not in the minimal root; the project is bound
	// read-only.
	want := []string{"ENOENT", "ok", "ENOENT", "EROFS"}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d results:\n%s", len(lines), out)
	}
	for i, line := range lines {
		var r probe.Result
		json.Unmarshal([]byte(line), &r)
		if r.Result != want[i] {
			t.Errorf("%s %s: got %s, want %s", r.Op, r.Target, r.Result, want[i])
		}
	}
}
