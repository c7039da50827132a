package verify

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpolicy/mcpolicy/build"
	"github.com/mcpolicy/mcpolicy/compiler"
	"github.com/mcpolicy/mcpolicy/emit"
	"github.com/mcpolicy/mcpolicy/emit/bwrap"
	"github.com/mcpolicy/mcpolicy/emit/docker"
	"github.com/mcpolicy/mcpolicy/emit/landlock"
	"github.com/mcpolicy/mcpolicy/launch"
	"github.com/mcpolicy/mcpolicy/probe"
)

// The differential test: generated policies, compiled once, run under every
// Linux backend with a probe in place of the server; the kernel's answers
// must match what the plan says, probe by probe.
//
//	MCPOLICY_VERIFY_CASES=N   generated cases per backend (default 200)
//	MCPOLICY_VERIFY_SEED=S    the generator's seed (default 1)
//
// In CI (CI=true) a missing backend fails the test instead of skipping it.

const probeInSandbox = "/opt/probe/mcpolicy"

type backendRun struct {
	name string
	view View
	// run executes the attempts under the plan; nil error with results.
	run func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error)
	// refuses predicts a compile-time refusal from the plan alone.
	refuses func(p *compiler.Plan) bool
}

type testCase struct {
	n      int
	root   string // project root
	policy string
	plan   *compiler.Plan
}

var (
	setupOnce sync.Once
	setupErr  error
	world     struct {
		base, probeDir, probeBin string
		fixture                  Fixture
		listener                 net.Listener
	}
)

// setup builds the static probe and the fixture once per test binary. The
// base folder is outside /tmp: Landlock scratch mounts a tmpfs over /tmp.
func setup(t *testing.T) {
	setupOnce.Do(func() {
		base, err := os.MkdirTemp("/var/tmp", "mcpolicy-verify-")
		if err != nil {
			setupErr = err
			return
		}
		world.base = base
		os.Chmod(base, 0o755)
		world.probeDir = filepath.Join(base, "probe")
		os.MkdirAll(world.probeDir, 0o755)
		world.probeBin = filepath.Join(world.probeDir, "mcpolicy")
		cmd := exec.Command("go", "build", "-o", world.probeBin, "../cmd/mcpolicy")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			setupErr = fmt.Errorf("building the probe: %v\n%s", err, out)
			return
		}
		home := filepath.Join(base, "home")
		plant(filepath.Join(home, ".aws", "credentials"), "[default]\naws_secret_access_key = planted\n")
		plant(filepath.Join(home, ".ssh", "id_ed25519"), "planted key\n")
		outside := filepath.Join(base, "outside")
		plant(filepath.Join(outside, "probe.txt"), "outside\n")
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			setupErr = err
			return
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		world.listener = l
		world.fixture = Fixture{Home: home, Outside: outside, Listener: l.Addr().String()}
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
}

// plant writes a file any uid may write: under docker the probe is uid
// 1000, and the plan, not file modes, must decide what it can change.
func plant(path, content string) {
	os.MkdirAll(filepath.Dir(path), 0o777)
	os.WriteFile(path, []byte(content), 0o666)
	os.Chmod(path, 0o666) // past the umask
}

func TestMain(m *testing.M) {
	// This binary doubles as the launcher for mutated plans, and so also as
	// the launcher's stage 2 inside the namespaces.
	if len(os.Args) > 1 && os.Args[1] == launch.Stage2Arg {
		launch.Stage2()
	}
	if planJSON := os.Getenv("MCPOLICY_HELPER_PLAN"); planJSON != "" {
		var p compiler.Plan
		if err := json.Unmarshal([]byte(planJSON), &p); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		rs, err := landlock.Build(&p, compiler.Machine{ProjectRoot: os.Getenv("MCPOLICY_HELPER_ROOT"), Home: os.Getenv("HOME")})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		code, err := launch.Start(rs, launch.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(125)
		}
		os.Exit(code)
	}
	code := m.Run()
	if world.base != "" {
		os.RemoveAll(world.base)
	}
	os.Exit(code)
}

// generate writes case n: a project of folders a..d (each with probe.txt,
// inner/probe.txt and maybe protected files) and a random policy over it.
func generate(t *testing.T, seed uint64, n int) *testCase {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	root := filepath.Join(world.base, "cases", strconv.Itoa(n))
	var mounts []string
	for _, d := range []string{"a", "b", "c", "d"} {
		plant(filepath.Join(root, d, "probe.txt"), d+"\n")
		plant(filepath.Join(root, d, "inner", "probe.txt"), d+" inner\n")
		switch rng.IntN(8) { // protected files in a quarter of the folders
		case 0:
			plant(filepath.Join(root, d, ".git", "config"), "[core]\n")
			plant(filepath.Join(root, d, ".git", "hooks", "pre-commit"), "#!/bin/sh\n")
		case 1:
			plant(filepath.Join(root, d, ".env"), "TOKEN=planted\n")
		}
		mode := []string{"", "ro", "rw"}[rng.IntN(3)]
		if mode != "" {
			mounts = append(mounts, fmt.Sprintf(`{source: %q, target: %q, mode: %q}`, d, "/m/"+d, mode))
			if rng.IntN(4) == 0 { // a nested mount with its own mode
				mounts = append(mounts, fmt.Sprintf(`{source: %q, target: %q, mode: %q}`, d+"/inner", "/m/"+d+"/inner", []string{"ro", "rw"}[rng.IntN(2)]))
			}
		}
	}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			os.Chmod(p, 0o777)
		}
		return nil
	})
	mounts = append(mounts, fmt.Sprintf(`{source: %q, target: "/opt/probe"}`, world.probeDir))
	scratch := ""
	if rng.IntN(2) == 0 {
		scratch = `scratch: {target: "/tmp", size: "1m"}`
	}
	policy := fmt.Sprintf(`version: "v1"
servers: s: {
	image: "mcpolicy-verify:%d"
	command: [%q, "probe"]
	backends: ["docker", "bwrap", "landlock"]
	mounts: [%s]
	%s
}
`, seed, probeInSandbox, strings.Join(mounts, ", "), scratch)
	file := filepath.Join(root, "mcpolicy.cue")
	if err := os.WriteFile(file, []byte(policy), 0o666); err != nil {
		t.Fatal(err)
	}
	proj, err := build.Discover(file)
	if err != nil {
		t.Fatal(err)
	}
	pols, err := proj.Load()
	if err != nil {
		t.Fatalf("case %d: %v\n%s", n, err, policy)
	}
	plans, err := compiler.Compile(pols, compiler.Options{Root: proj.Root, Home: world.fixture.Home})
	if err != nil {
		t.Fatalf("case %d: %v\n%s", n, err, policy)
	}
	return &testCase{n: n, root: proj.Root, policy: file, plan: plans[0]}
}

func (c *testCase) machine() compiler.Machine {
	return compiler.Machine{ProjectRoot: c.root, Home: world.fixture.Home}
}

func withCommand(p *compiler.Plan, bin string, attempts []probe.Attempt) *compiler.Plan {
	q := *p
	q.Command = []string{bin, "probe"}
	for _, a := range attempts {
		q.Command = append(q.Command, string(a.Op)+":"+a.Target)
	}
	return &q
}

func parseResults(out []byte) ([]probe.Result, error) {
	var rs []probe.Result
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var r probe.Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("probe output %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func runCmd(name string, args []string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\nstderr: %s", name, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

func bwrapBackend(mutate func([]string) []string) backendRun {
	return backendRun{name: "bwrap", view: SandboxView, refuses: func(*compiler.Plan) bool { return false },
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			args, err := bwrap.Args(withCommand(c.plan, probeInSandbox, attempts), c.machine(), bwrap.DetectLayout(), 0)
			if err != nil {
				return nil, err
			}
			if mutate != nil {
				args = mutate(args)
			}
			out, err := runCmd("bwrap", args, []string{"PATH=/usr/bin:/bin"})
			if err != nil {
				return nil, err
			}
			return parseResults(out)
		}}
}

func landlockBackend(mutate func(*compiler.Plan)) backendRun {
	return backendRun{name: "landlock", view: HostView,
		refuses: func(p *compiler.Plan) bool {
			_, err := landlock.Build(p, compiler.Machine{ProjectRoot: "/p", Home: "/h"})
			var ne *emit.NotEnforceableError
			if errors.As(err, &ne) {
				return true
			}
			return false
		},
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			p := withCommand(c.plan, world.probeBin, attempts)
			if mutate != nil { // a deliberately wrong plan cannot come from a policy
				mutate(p)
				return runLaunchLibrary(p, c)
			}
			args := append([]string{"exec", "--policy", c.policy, "--server", "s", "--"}, p.Command...)
			out, err := runCmd(world.probeBin, args, []string{"HOME=" + world.fixture.Home, "PATH=/usr/bin:/bin"})
			if err != nil {
				return nil, err
			}
			return parseResults(out)
		}}
}

// runLaunchLibrary is used only by the wrong-emitter test: it re-runs this
// test binary as a launcher for a mutated plan (see TestMain).
func runLaunchLibrary(p *compiler.Plan, c *testCase) ([]probe.Result, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	out, err := runCmd(os.Args[0], nil, []string{
		"MCPOLICY_HELPER_PLAN=" + string(b), "MCPOLICY_HELPER_ROOT=" + c.root, "HOME=" + world.fixture.Home, "PATH=/usr/bin:/bin"})
	if err != nil {
		return nil, err
	}
	return parseResults(out)
}

func engineBackend(engine string, mutate func([]string) []string) backendRun {
	var once sync.Once
	var image string
	var imgErr error
	return backendRun{name: engine, view: SandboxView, refuses: func(*compiler.Plan) bool { return false },
		run: func(t *testing.T, c *testCase, attempts []probe.Attempt) ([]probe.Result, error) {
			once.Do(func() { image, imgErr = importImage(engine) })
			if imgErr != nil {
				return nil, imgErr
			}
			p := withCommand(c.plan, probeInSandbox, attempts)
			p.Image = image
			args, err := docker.Args(p, c.machine())
			if err != nil {
				return nil, err
			}
			if mutate != nil {
				args = mutate(args)
			}
			out, err := runCmd(engine, args, os.Environ())
			if err != nil {
				return nil, err
			}
			return parseResults(out)
		}}
}

// importImage makes an image with nothing but empty folders: the probe
// arrives through the policy's own read-only mount of its folder.
func importImage(engine string) (string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []struct {
		name string
		mode int64
	}{{"tmp/", 0o1777}, {"var/", 0o755}, {"var/tmp/", 0o1777}, {"run/", 0o755}, {"etc/", 0o755}, {"opt/", 0o755}, {"m/", 0o755}} {
		tw.WriteHeader(&tar.Header{Name: d.name, Typeflag: tar.TypeDir, Mode: d.mode})
	}
	tw.Close()
	tag := fmt.Sprintf("mcpolicy-verify:%d", os.Getpid())
	if engine == "podman" {
		tag = "localhost/" + tag
	}
	cmd := exec.Command(engine, "import", "-", tag)
	cmd.Stdin = &buf
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s import: %v\n%s", engine, err, out)
	}
	return tag, nil
}

// available says whether a backend can run here; in CI it must.
func available(t *testing.T, name string) bool {
	var err error
	switch name {
	case "bwrap":
		_, err = exec.LookPath("bwrap")
	case "landlock":
		if h := launch.DetectHost(); h.ABI < landlock.MinABI {
			err = fmt.Errorf("Landlock ABI %d", h.ABI)
		}
	default:
		err = exec.Command(name, "info").Run()
	}
	if err == nil {
		return true
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("backend %s is not usable (%v); CI must install it", name, err)
	}
	t.Skipf("backend %s is not usable here: %v", name, err)
	return false
}

// casesAndSeed: 400 cases by default (host backends are cheap, and about
// a third of the cases are refused by landlock at compile time), of which
// the container engines, at half a second a run, take the first 200.
func casesAndSeed() (int, uint64) {
	n, seed := 400, uint64(1)
	if v, err := strconv.Atoi(os.Getenv("MCPOLICY_VERIFY_CASES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("MCPOLICY_VERIFY_SEED"), 10, 64); err == nil {
		seed = v
	}
	return n, seed
}

// disagreement is one probe where the kernel and the plan differ.
type disagreement struct {
	backend string
	n       int
	e       Expectation
	got     string
}

// verifyBackend runs every case under one backend and returns the
// disagreements and the errno counts of the denials.
func verifyBackend(t *testing.T, b backendRun, cases []*testCase) ([]disagreement, map[string]int) {
	var mu sync.Mutex
	var dis []disagreement
	errnos := map[string]int{}
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for _, c := range cases {
		if b.refuses(c.plan) {
			mu.Lock()
			errnos["refused at compile time"]++
			mu.Unlock()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(c *testCase) {
			defer wg.Done()
			defer func() { <-sem }()
			baseline := c.plan.Runtime.ReadOnly
			es := Expectations(c.plan, c.machine(), world.fixture, b.view, append(baseline, world.probeDir))
			attempts := make([]probe.Attempt, len(es))
			for i, e := range es {
				attempts[i] = e.Attempt
			}
			rs, err := b.run(t, c, attempts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("%s case %d: %v", b.name, c.n, err)
				return
			}
			if len(rs) != len(es) {
				t.Errorf("%s case %d: %d results for %d attempts", b.name, c.n, len(rs), len(es))
				return
			}
			for i, e := range es {
				ok := rs[i].Result == "ok"
				if ok != e.Allowed {
					dis = append(dis, disagreement{b.name, c.n, e, rs[i].Result})
				}
				if !ok {
					errnos[rs[i].Result]++
				}
			}
		}(c)
	}
	wg.Wait()
	return dis, errnos
}

func report(t *testing.T, dis []disagreement) {
	for i, d := range dis {
		if i == 20 {
			t.Errorf("... and %d more", len(dis)-20)
			break
		}
		want := "denied"
		if d.e.Allowed {
			want = "allowed"
		}
		t.Errorf("%s case %d: %s %s (%s): plan says %s, kernel said %s", d.backend, d.n, d.e.Op, d.e.Target, d.e.Why, want, d.got)
	}
}

func TestDifferential(t *testing.T) {
	setup(t)
	n, seed := casesAndSeed()
	cases := make([]*testCase, n)
	for i := range cases {
		cases[i] = generate(t, seed, i)
	}
	engineCases := cases
	if os.Getenv("MCPOLICY_VERIFY_CASES") == "" {
		engineCases = cases[:min(200, len(cases))]
	}
	for _, b := range []backendRun{bwrapBackend(nil), landlockBackend(nil), engineBackend("docker", nil), engineBackend("podman", nil)} {
		t.Run(b.name, func(t *testing.T) {
			if !available(t, b.name) {
				return
			}
			cs := cases
			if b.name == "docker" || b.name == "podman" {
				cs = engineCases
			}
			dis, errnos := verifyBackend(t, b, cs)
			report(t, dis)
			keys := make([]string, 0, len(errnos))
			for k := range errnos {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var parts []string
			for _, k := range keys {
				parts = append(parts, fmt.Sprintf("%s=%d", k, errnos[k]))
			}
			t.Logf("%s: %d cases, %d disagreements; denials by errno: %s", b.name, len(cs), len(dis), strings.Join(parts, " "))
		})
	}
}

// TestWrongEmittersAreCaught: the harness must notice a sandbox wider than
// its plan. Each backend is run with one deliberate mistake.
func TestWrongEmittersAreCaught(t *testing.T) {
	setup(t)
	_, seed := casesAndSeed()
	var cases []*testCase
	for i := range 6 {
		cases = append(cases, generate(t, seed, 10000+i))
	}
	replace := func(old string, new ...string) func([]string) []string {
		return func(args []string) []string {
			var out []string
			for _, a := range args {
				if a == old {
					out = append(out, new...)
				} else {
					out = append(out, a)
				}
			}
			return out
		}
	}
	mistakes := []struct {
		what string
		b    backendRun
	}{
		{"bwrap without --unshare-net", bwrapBackend(replace("--unshare-all", "--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"))},
		{"landlock with / in the baseline", landlockBackend(func(p *compiler.Plan) { p.Runtime.ReadOnly = append(p.Runtime.ReadOnly, "/") })},
		{"docker on the host network", engineBackend("docker", func(args []string) []string {
			for i := range args {
				if args[i] == "none" && i > 0 && args[i-1] == "--network" {
					args[i] = "host"
				}
			}
			return args
		})},
	}
	for _, m := range mistakes {
		t.Run(m.b.name, func(t *testing.T) {
			if !available(t, m.b.name) {
				return
			}
			dis, _ := verifyBackend(t, m.b, cases)
			if len(dis) == 0 {
				t.Errorf("%s: the harness found no disagreement; it cannot tell a wider sandbox", m.what)
			} else {
				t.Logf("%s: caught, %d disagreements, e.g. %s %s: plan says denied, kernel said %s", m.what, len(dis), dis[0].e.Op, dis[0].e.Target, dis[0].got)
			}
		})
	}
}
